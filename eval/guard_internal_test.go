package eval

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// localShell runs the guard and the check with bash in a directory of this
// machine, as the check's sandbox runs them: the same guard.py, payload and
// command lines, with the workspace at dir. env is the shell's own
// environment (in a sandbox: the image's and the server's).
type localShell struct {
	dir string
	env []string
}

func (s localShell) run(ctx context.Context, command string, timeout time.Duration) (int, string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir, cmd.Env = s.dir, s.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, out.String(), true, nil
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String(), false, nil
	}
	if err != nil {
		return -1, out.String(), false, err
	}
	return 0, out.String(), false, nil
}

func (s localShell) write(_ context.Context, path, text string) error {
	return os.WriteFile(filepath.Join(s.dir, filepath.FromSlash(path)), []byte(text), 0o644)
}

// local is a workspace on this machine and how to run a check in it: the
// python that runs the guard, and a PATH of the machine's own tool
// directories (the sandbox's CheckPATH, where the tools are).
type local struct {
	setup guardSetup
	sh    localShell
}

// newLocal copies src (a task's workspace, "" for none) into a new
// workspace. It skips the test when a tool the check needs is missing.
func newLocal(t *testing.T, src string, tools ...string) *local {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skip("no python3 on this machine to run the check's guard with")
	}
	python := strings.TrimSpace(string(out))
	dirs := []string{filepath.Dir(python)}
	for _, tool := range tools {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("no %s on this machine: the check needs it", tool)
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	dirs = append(dirs, "/usr/local/bin", "/usr/bin", "/bin")
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(root, "workspace")
	if src == "" {
		if err := os.Mkdir(root, 0o755); err != nil {
			t.Fatal(err)
		}
	} else if err := os.CopyFS(root, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	// Files the agent made read-only or unreadable must not stop the
	// test's clean-up.
	t.Cleanup(func() {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	env := append(os.Environ(), "PATH="+strings.Join(dirs, ":"))
	return &local{setup: guardSetup{root: root, python: python, path: strings.Join(dirs, ":")}, sh: localShell{dir: root, env: env}}
}

// do runs a bash script in the workspace, as the agent would have.
func (l *local) do(t *testing.T, script string) {
	t.Helper()
	if code, out, _, err := l.sh.run(t.Context(), "set -e\n"+script, time.Minute); err != nil || code != 0 {
		t.Fatalf("the agent's script failed (exit %d, %v):\n%s", code, err, out)
	}
}

func (l *local) check(t *testing.T, task *Task) *CheckResult {
	t.Helper()
	return guarded(t.Context(), l.sh, task, l.setup, 2*time.Minute)
}

// starterTask loads one task of the starter suite.
func starterTask(t *testing.T, id string) *Task {
	t.Helper()
	s, err := Load(filepath.Join("..", "evals", "starter"))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range s.Tasks {
		if task.ID == id {
			return task
		}
	}
	t.Fatalf("the starter suite has no task %s", id)
	return nil
}

func solution(t *testing.T, id string) string {
	t.Helper()
	s, err := readSolution(id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readSolution(id string) (string, error) {
	b, err := os.ReadFile(filepath.Join("..", "evals", "starter", id, "solution.sh"))
	return string(b), err
}

func changes(cs ...string) []FileChange {
	var out []FileChange
	for i := 0; i < len(cs); i += 2 {
		out = append(out, FileChange{Path: cs[i+1], Change: cs[i]})
	}
	return out
}
