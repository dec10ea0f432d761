package eval

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	root  string
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
	state := filepath.Join(filepath.Dir(root), "state")
	return &local{root: root, setup: guardSetup{python: python, state: state, path: strings.Join(dirs, ":")}, sh: localShell{dir: root, env: env}}
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

// The guard's contract, on a workspace that tries every way around it: a
// graded directory is put back whole (the agent's files in it removed, its
// deleted and changed files restored, a read-only subdirectory too), a
// graded file whose parent the agent replaced with a link to a directory
// outside is written into a real directory, never through the link, binary
// files come back byte for byte, check/ files appear, refused paths and
// modules that would shadow a graded .py go; the agent's other files stay.
// The check then runs in the harness's environment: its PATH, a fresh
// HOME, none of the shell's other variables, and nothing of the guard is
// left in the workspace.
func TestGuardRestoresWhatTheGraderOwns(t *testing.T) {
	t.Parallel()
	suite := t.TempDir()
	bin := string([]byte{0, 1, 2, 0xff, 0xfe, '\n', 0x80})
	for name, content := range map[string]string{
		"t/task.json": `{"task": "x", "graded": ["tests", "pkg/config.ini", "data.bin", "lib/check_me.py"], "refused": ["**/conftest.py", "node_modules"],
			"check": "echo PATH=$PATH; echo HOME=$HOME; ls -A \"$HOME\" | wc -l; echo EVIL=${EVIL-unset}; echo CI=$CI; echo done"}`,
		"t/workspace/tests/test_a.py":        "A\n",
		"t/workspace/tests/sub/b.txt":        "B\n",
		"t/workspace/pkg/config.ini":         "strict = true\n",
		"t/workspace/data.bin":               bin,
		"t/workspace/lib/check_me.py":        "X = 1\n",
		"t/workspace/app.py":                 "print('app')\n",
		"t/check/tests/hidden_test.py":       "H\n",
		"t/check/hidden/deeper/fixture.json": "{}\n",
	} {
		p := filepath.Join(suite, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Load(suite)
	if err != nil {
		t.Fatal(err)
	}
	task := s.Tasks[0]
	l := newLocal(t, task.WorkspaceDir())
	outside := filepath.Join(filepath.Dir(l.root), "outside")
	l.do(t, `outside=`+shellQuote(outside)+`
echo changed > tests/test_a.py
rm tests/sub/b.txt
echo mine > tests/extra.py
mkdir -p tests/__pycache__ && echo cache > tests/__pycache__/test_a.cpython-311.pyc
chmod 555 tests/sub
mkdir -p "$outside" && echo 'strict = false' > "$outside/config.ini"
rm -r pkg && ln -s "$outside" pkg
rm data.bin && ln -s /etc/hostname data.bin
mkdir lib/check_me && echo 'X = 2' > lib/check_me/__init__.py && echo so > lib/check_me.cpython-311-x86_64-linux-gnu.so
echo 'import pytest' > conftest.py
mkdir -p lib/sub && echo 'import pytest' > lib/sub/conftest.py && echo 'import pytest' > tests/conftest.py
mkdir -p node_modules/.bin && echo fake > node_modules/.bin/python3
echo 'print("mine")' > app.py
echo 'planted' > hidden/deeper/fixture.json 2>/dev/null || true`)
	l.sh.env = append(l.sh.env, "EVIL=1", "PATH="+l.root+"/node_modules/.bin:"+l.setup.path)

	res := l.check(t, task)
	if res.Error != "" || !res.Passed() {
		t.Fatalf("check: %+v", res)
	}
	want := changes("changed", "tests/test_a.py", "added", "tests/extra.py", "deleted", "tests/sub/b.txt",
		"changed", "pkg/config.ini", "changed", "data.bin",
		"added", "lib/check_me", "added", "lib/check_me.cpython-311-x86_64-linux-gnu.so",
		"added", "conftest.py", "added", "lib/sub/conftest.py", "added", "tests/conftest.py", "added", "node_modules")
	got := slices.Clone(res.GradedChanges)
	for _, s := range [][]FileChange{got, want} {
		slices.SortFunc(s, func(a, b FileChange) int { return strings.Compare(a.Path, b.Path) })
	}
	if !slices.Equal(got, want) {
		t.Errorf("graded changes:\n got %v\nwant %v", got, want)
	}

	var files []string
	root := l.root
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Error(err)
			return nil
		}
		if r, _ := filepath.Rel(root, p); r != "." {
			kind := "file"
			switch {
			case d.Type()&os.ModeSymlink != 0:
				kind = "link"
			case d.IsDir():
				kind = "dir"
			}
			files = append(files, filepath.ToSlash(r)+" "+kind)
		}
		return nil
	})
	wantFiles := []string{"app.py file", "data.bin file", "hidden dir", "hidden/deeper dir", "hidden/deeper/fixture.json file",
		"lib dir", "lib/check_me.py file", "lib/sub dir", "pkg dir", "pkg/config.ini file",
		"tests dir", "tests/hidden_test.py file", "tests/sub dir", "tests/sub/b.txt file", "tests/test_a.py file"}
	if !slices.Equal(files, wantFiles) {
		t.Errorf("the workspace after the guard:\n got %v\nwant %v", files, wantFiles)
	}
	for name, want := range map[string]string{"tests/test_a.py": "A\n", "tests/sub/b.txt": "B\n", "pkg/config.ini": "strict = true\n",
		"data.bin": bin, "tests/hidden_test.py": "H\n", "hidden/deeper/fixture.json": "{}\n", "app.py": "print(\"mine\")\n"} {
		if b, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "config.ini")); string(b) != "strict = false\n" {
		t.Errorf("the guard wrote through the agent's link: %s/config.ini = %q", outside, b)
	}

	for _, line := range []string{"PATH=" + l.setup.path + "\n", "EVIL=unset\n", "CI=true\n", "\n0\n", "done\n"} {
		if !strings.Contains(res.Output, line) {
			t.Errorf("the check's output lacks %q:\n%s", line, res.Output)
		}
	}
	if !strings.Contains(res.Output, "HOME=/") || strings.Contains(res.Output, "HOME="+os.Getenv("HOME")+"\n") {
		t.Errorf("the check's HOME is not a fresh directory:\n%s", res.Output)
	}

	// A resumed drydock eval runs the guard again in the same sandbox,
	// where the suite's copies are back: it still reports what the agent
	// had left.
	again := l.check(t, task)
	if !again.Passed() || !slices.Equal(again.GradedChanges, res.GradedChanges) {
		t.Errorf("the guard run again: passed %v, changes %v; want %v", again.Passed(), again.GradedChanges, res.GradedChanges)
	}
}

// A guard that cannot do its work is a check that could not run, not a
// failed (or passed) check.
func TestGuardFailureIsACheckError(t *testing.T) {
	t.Parallel()
	l := newLocal(t, "")
	task := &Task{ID: "x", Check: "true"}
	l.setup.python = "/nonexistent/python3"
	res := l.check(t, task)
	if res.Error == "" || !strings.Contains(res.Error, "prepare the check: the guard failed") || res.Passed() {
		t.Errorf("check with no python: %+v", res)
	}
}
