package eval

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The check's guard. A check runs in a copy of the agent's finished
// workspace, so an agent could pass it by editing what the check relies
// on: the tests, the runner's configuration, a fake runner. Before the
// check, the guard (guard.py, run in the check's sandbox with python3 -I)
// puts back the files the grader owns (a task's graded paths from its
// workspace/, and its check/ files), removes its refused paths, and reports
// which graded files the agent changed; the check then runs from a script
// outside the workspace in an environment the harness chose (checkEnv). See
// docs/ARCHITECTURE.md, "Eval harness", for what this does and does not
// defend against.

//go:embed guard.py
var guardScript string

const (
	// sandboxPython runs the guard: the image's own (read-only root), by
	// absolute path; where there is none (the "local" runtime's host), the
	// python3 on the held shell's PATH, which the server set.
	sandboxPython = "/usr/bin/python3"
	// CheckPATH is the check's PATH: the image's directories only, not the
	// agent's home (~/.local/bin) nor anything in the workspace
	// (node_modules/.bin).
	CheckPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// maxGraderBytes bounds a task's graded and check files: they travel
	// to the check's sandbox through the API, base64 in JSON.
	maxGraderBytes = 4 << 20
	// guardChunk is how much of the payload one write carries, well under
	// the API's default 1 MiB bound on a request body.
	guardChunk  = 512 << 10
	guardMarker = "DRYDOCK-EVAL-GUARD "
)

// checkEnv lists the variables of the sandbox's own environment (set by the
// image and the server, never by the agent: the check's sandbox is fresh)
// that reach the check; everything else is dropped. PATH and HOME are the
// harness's.
var checkEnv = []string{"LANG", "LC_ALL", "TZ", "DISPLAY", "XAUTHORITY", "DRYDOCK_PROFILE",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"}

// grader is what a task's guard restores, refuses and compares.
type grader struct {
	graded  []guardPath
	refused []string
	files   []guardFile
}

// guardPath is a graded path and the SHA-256 of each of its files as the
// suite has them, which the agent's copies are compared with.
type guardPath struct {
	Path  string            `json:"path"`
	Dir   bool              `json:"dir"`
	Files map[string]string `json:"files"` // workspace-relative path → hex SHA-256
}

// guardFile is a file written into the check's workspace.
type guardFile struct {
	Path string      `json:"path"`
	Mode fs.FileMode `json:"mode"`
	Data []byte      `json:"data"`
}

// FileChange is a graded file that the agent's workspace did not hold as
// the suite has it.
type FileChange struct {
	Path string `json:"path"`
	// Change is "changed", "deleted", or "added" (a file in a graded
	// directory or a refused path that the suite does not have).
	Change string `json:"change"`
}

// GraderFiles lists the workspace paths of the files the check's guard
// writes from the suite: the graded files and the check files, sorted.
func (t *Task) GraderFiles() []string {
	var out []string
	for _, f := range t.grader.files {
		out = append(out, f.Path)
	}
	return out
}

// relPath checks a workspace-relative path a task names and cleans it.
func relPath(field, p string) (string, error) {
	c := strings.TrimSuffix(p, "/")
	switch {
	case c == "" || strings.ContainsRune(c, 0) || strings.Contains(c, `\`):
		return "", fmt.Errorf("%s %q: give a path relative to the workspace, with '/'", field, p)
	case path.IsAbs(c) || path.Clean(c) != c || c == "." || c == ".." || strings.HasPrefix(c, "../"):
		return "", fmt.Errorf("%s %q: give a clean path relative to the workspace (no '.', '..', '//' or leading '/')", field, p)
	}
	return c, nil
}

// under reports whether p is q or lies within q.
func under(p, q string) bool { return p == q || strings.HasPrefix(p, q+"/") }

// resolveGrader reads the files the task's grader owns: its graded paths
// from the workspace directory and every file of checkDir ("" for none).
func (t *Task) resolveGrader(checkDir string) error {
	g := grader{}
	size := 0
	add := func(dir, rel string) (string, error) {
		full := filepath.Join(dir, filepath.FromSlash(rel))
		// dir is resolved already: a parent that is a link could lead out
		// of the suite, to a file of this machine sent to the sandbox.
		if parent, err := filepath.EvalSymlinks(filepath.Dir(full)); err != nil || parent != filepath.Dir(full) {
			return "", fmt.Errorf("%s: a parent directory is a link (give the directory itself)", full)
		}
		fi, err := os.Lstat(full)
		if err != nil {
			return "", err
		}
		if !fi.Mode().IsRegular() {
			return "", fmt.Errorf("%s is not a regular file (give the file itself, not a link)", full)
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return "", err
		}
		if size += len(data); size > maxGraderBytes {
			return "", fmt.Errorf("the graded and check files are larger than %d bytes", maxGraderBytes)
		}
		g.files = slices.DeleteFunc(g.files, func(f guardFile) bool { return f.Path == rel })
		g.files = append(g.files, guardFile{Path: rel, Mode: fi.Mode().Perm() | 0o600, Data: data})
		sum := sha256.Sum256(data)
		return hex.EncodeToString(sum[:]), nil
	}
	// walk calls fn for every file under dir/rel (rel itself when a file).
	walk := func(dir, rel string, fn func(rel string) error) (isDir bool, err error) {
		root := filepath.Join(dir, filepath.FromSlash(rel))
		fi, err := os.Lstat(root)
		if err != nil {
			return false, err
		}
		if !fi.IsDir() {
			return false, fn(rel)
		}
		return true, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			r, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			return fn(filepath.ToSlash(r))
		})
	}
	for _, p := range t.Graded {
		rel, err := relPath("graded", p)
		if err != nil {
			return err
		}
		if t.dir == "" {
			return fmt.Errorf("graded %q: the task has no workspace to take it from", p)
		}
		if slices.ContainsFunc(g.graded, func(o guardPath) bool { return under(rel, o.Path) || under(o.Path, rel) }) {
			return fmt.Errorf("graded %q overlaps another graded path", p)
		}
		gp := guardPath{Path: rel, Files: map[string]string{}}
		gp.Dir, err = walk(t.dir, rel, func(r string) error {
			sum, err := add(t.dir, r)
			gp.Files[r] = sum
			return err
		})
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("graded %q is not in the task's workspace (graded files are put back from it; files the agent never sees go in check/)", p)
		}
		if err != nil {
			return fmt.Errorf("graded %q: %w", p, err)
		}
		g.graded = append(g.graded, gp)
	}
	for _, p := range t.Refused {
		if name, ok := strings.CutPrefix(p, "**/"); ok {
			// A name refused at any depth: conftest.py wherever pytest
			// would load it from.
			if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\*?[\x00") {
				return fmt.Errorf("refused %q: give **/ and a file or directory name, as in **/conftest.py", p)
			}
			if t.dir != "" {
				var given string
				filepath.WalkDir(t.dir, func(path string, d fs.DirEntry, err error) error {
					if err == nil && d.Name() == name && path != t.dir {
						given, _ = filepath.Rel(t.dir, path)
						return fs.SkipAll
					}
					return nil
				})
				if given != "" {
					return fmt.Errorf("refused %q: the task's workspace has %s, and the agent cannot be refused what it was given", p, filepath.ToSlash(given))
				}
			}
			g.refused = append(g.refused, "**/"+name)
			continue
		}
		rel, err := relPath("refused", p)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(g.graded, func(o guardPath) bool { return under(rel, o.Path) || under(o.Path, rel) }) {
			return fmt.Errorf("refused %q overlaps a graded path", p)
		}
		if t.dir != "" {
			if _, err := os.Lstat(filepath.Join(t.dir, filepath.FromSlash(rel))); err == nil {
				return fmt.Errorf("refused %q is in the task's workspace: the agent cannot be refused what it was given", p)
			}
		}
		g.refused = append(g.refused, rel)
	}
	if checkDir != "" {
		if _, err := walk(checkDir, ".", func(r string) error {
			if _, err := relPath("check file", r); err != nil {
				return err
			}
			_, err := add(checkDir, r)
			return err
		}); err != nil {
			return fmt.Errorf("check_files %q: %w", t.CheckFiles, err)
		}
	}
	slices.SortFunc(g.files, func(a, b guardFile) int { return strings.Compare(a.Path, b.Path) })
	t.grader = g
	return nil
}

// shell is where a check runs: the check's held sandbox through the API,
// or, in tests, a directory on this machine.
type shell interface {
	// run runs a bash command line and says how it ended.
	run(ctx context.Context, command string, timeout time.Duration) (exitCode int, output string, timedOut bool, err error)
	// write creates a file, relative to the workspace, holding text.
	write(ctx context.Context, path, text string) error
}

// guardSetup says how the guard runs: the python that runs it ("" for
// sandboxPython or the PATH's), the directory where it keeps what it found
// (outside the workspace), and the check's PATH. The workspace is the held
// shell's working directory, where its sessions start (/workspace in a
// container, a directory of the host with the "local" runtime).
type guardSetup struct {
	python, state, path string
}

// sandboxSetup is the setup in the held sandbox of check job id: the
// guard's state is named after it (the "local" runtime's sandboxes share
// the host's /tmp).
func sandboxSetup(id string) guardSetup {
	return guardSetup{state: "/tmp/drydock-eval-guard-" + id, path: CheckPATH}
}

// guarded runs the task's check in sh behind the guard, with timeout.
func guarded(ctx context.Context, sh shell, t *Task, setup guardSetup, timeout time.Duration) *CheckResult {
	res := &CheckResult{ExitCode: -1}
	g, err := guard(ctx, sh, t, setup)
	if err != nil {
		res.Error = "prepare the check: " + err.Error()
		return res
	}
	res.GradedChanges, res.MoreGradedChanges = g.Changes, g.More
	code, out, timedOut, err := sh.run(ctx, checkCommand(setup, g.Root, g.Dir), timeout)
	if err != nil {
		res.Error = "run the check: " + err.Error()
		return res
	}
	res.ExitCode, res.TimedOut, res.Output = code, timedOut, out
	return res
}

// guarding is what the guard reports: the workspace, the directory that
// holds the check's script and home, and what the agent changed.
type guarding struct {
	Root    string       `json:"root"`
	Dir     string       `json:"dir"`
	Changes []FileChange `json:"changes"`
	More    int          `json:"more"`
}

// guard writes the guard and its payload into the workspace under names
// the agent cannot have guessed, and runs it.
func guard(ctx context.Context, sh shell, t *Task, setup guardSetup) (*guarding, error) {
	// Bash reads a script as it runs it, so code the check runs (the
	// agent's, as the same user) could rewrite the lines still to come; a
	// group and its exit on one line are parsed whole before anything
	// runs.
	payload, err := json.Marshal(map[string]any{
		"graded": nonNil(t.grader.graded), "refused": nonNil(t.grader.refused), "files": nonNil(t.grader.files),
		"check": "{\n" + t.Check + "\n}; exit $?",
	})
	if err != nil {
		return nil, err
	}
	var nonce [12]byte
	_, _ = rand.Read(nonce[:])
	prefix := ".drydock-eval-" + hex.EncodeToString(nonce[:])
	if err := sh.write(ctx, prefix+".py", guardScript); err != nil {
		return nil, fmt.Errorf("write the guard: %w", err)
	}
	py := shellQuote(setup.python)
	if setup.python == "" {
		py = `"$py"`
	}
	cmd := "py=" + sandboxPython + `; [ -x "$py" ] || py=python3; ` + py + " -I " + prefix + ".py \"$PWD\" " + shellQuote(setup.state)
	enc := base64.StdEncoding.EncodeToString(payload)
	for i := 0; i*guardChunk < len(enc); i++ {
		name := fmt.Sprintf("%s.%d", prefix, i)
		if err := sh.write(ctx, name, enc[i*guardChunk:min(len(enc), (i+1)*guardChunk)]); err != nil {
			return nil, fmt.Errorf("write the guard's files: %w", err)
		}
		cmd += " " + name
	}
	code, out, _, err := sh.run(ctx, cmd, 2*time.Minute)
	if err != nil {
		return nil, fmt.Errorf("run the guard: %w", err)
	}
	var res guarding
	_, line, found := strings.Cut(out, guardMarker)
	line, _, _ = strings.Cut(line, "\n")
	if code != 0 || !found || json.Unmarshal([]byte(line), &res) != nil || !strings.HasPrefix(res.Dir, "/") || !strings.HasPrefix(res.Root, "/") {
		return nil, fmt.Errorf("the guard failed (exit %d): %s", code, tail(out, 1000))
	}
	return &res, nil
}

// checkCommand runs the check's script with bash, in the workspace, in an
// environment the harness chose: PATH without the agent's directories, a
// fresh HOME, CI=true (no test runner waits for input), Python's bytecode
// caches outside the workspace (a __pycache__ the agent left, which could
// hold an "unchecked" .pyc that Python loads whatever the source says, is
// never read), and checkEnv from the sandbox's own environment. bash reads
// no startup file.
func checkCommand(setup guardSetup, root, dir string) string {
	var b strings.Builder
	b.WriteString("cd " + shellQuote(root) + " && /usr/bin/env -i PATH=" + shellQuote(setup.path) + " HOME=" + shellQuote(dir+"/home") +
		" SHELL=/bin/bash CI=true PYTHONPYCACHEPREFIX=" + shellQuote(dir+"/pycache"))
	for _, v := range checkEnv {
		fmt.Fprintf(&b, ` ${%s+"%s=$%s"}`, v, v, v)
	}
	b.WriteString(" /bin/bash --noprofile --norc " + shellQuote(dir+"/check.sh"))
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
