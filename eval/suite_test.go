package eval_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/eval"
)

// write creates files under dir, name → content.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A suite directory: each subdirectory with a task.json is a task, named
// after it unless it names itself, its "workspace" subdirectory uploaded;
// tasks come sorted by id.
func TestLoadDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "mysuite")
	write(t, dir, map[string]string{
		"zeta/task.json":         `{"task": "make hello.txt", "check": "test -f hello.txt", "profile": "desktop", "timeout": "10m", "max_steps": 20, "check_timeout": 30}`,
		"alpha/task.json":        `{"id": "fix-it", "task": "fix the test", "check": "pytest -q", "egress": []}`,
		"alpha/workspace/app.py": "print(1)\n",
		"shared/README.md":       "not a task",
		"notes.txt":              "ignored",
	})
	s, err := eval.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "mysuite" || len(s.Tasks) != 2 {
		t.Fatalf("suite %q with %d tasks; want mysuite with 2", s.Name, len(s.Tasks))
	}
	fix, zeta := s.Tasks[0], s.Tasks[1]
	if fix.ID != "fix-it" || zeta.ID != "zeta" {
		t.Errorf("ids %q, %q; want fix-it, zeta (sorted)", fix.ID, zeta.ID)
	}
	if want, _ := filepath.EvalSymlinks(filepath.Join(dir, "alpha", "workspace")); fix.WorkspaceDir() != want {
		t.Errorf("workspace %q; want %q", fix.WorkspaceDir(), want)
	}
	if fix.Egress == nil || len(fix.Egress) != 0 {
		t.Errorf("egress [] must stay an empty list (none), not nil (the server's default): %#v", fix.Egress)
	}
	if zeta.WorkspaceDir() != "" || zeta.Egress != nil || zeta.Profile != drydock.ProfileDesktop ||
		time.Duration(zeta.Timeout) != 10*time.Minute || zeta.MaxSteps != 20 || time.Duration(zeta.CheckTimeout) != 30*time.Second {
		t.Errorf("zeta = %+v", zeta)
	}
}

// A suite file lists its tasks; workspaces are relative to the file.
func TestLoadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"suite.json":    `{"name": "smoke", "tasks": [{"id": "b", "task": "x", "check": "true", "workspace": "ws/b"}, {"id": "a", "task": "y", "check": "false"}]}`,
		"ws/b/file.txt": "b",
		"other.json":    `{"tasks": [{"id": "only", "task": "t", "check": "c"}]}`,
	})
	s, err := eval.Load(filepath.Join(dir, "suite.json"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "smoke" || len(s.Tasks) != 2 || s.Tasks[0].ID != "a" || !strings.HasSuffix(s.Tasks[1].WorkspaceDir(), filepath.Join("ws", "b")) {
		t.Errorf("suite %+v", s)
	}
	if s, err := eval.Load(filepath.Join(dir, "other.json")); err != nil || s.Name != "other" {
		t.Errorf("a suite file without a name is named after the file: %v %v", s, err)
	}
}

// Bad suites are refused with the file and the problem named.
func TestLoadRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no tasks", map[string]string{"readme/x.txt": "x"}, "has no tasks"},
		{"no check", map[string]string{"a/task.json": `{"task": "x"}`}, `"check" is required`},
		{"no task", map[string]string{"a/task.json": `{"check": "true"}`}, `"task" is required`},
		{"blank task", map[string]string{"a/task.json": `{"task": "  ", "check": "true"}`}, `"task" is required`},
		{"misspelt field", map[string]string{"a/task.json": `{"task": "x", "check": "true", "check_timout": "1m"}`}, `unknown field "check_timout"`},
		{"bad id", map[string]string{"a/task.json": `{"id": "../x", "task": "x", "check": "true"}`}, `id "../x"`},
		{"upper-case dir", map[string]string{"Hello/task.json": `{"task": "x", "check": "true"}`}, `id "Hello"`},
		{"same id twice", map[string]string{"a/task.json": `{"id": "t", "task": "x", "check": "true"}`, "b/task.json": `{"id": "t", "task": "x", "check": "true"}`}, `"t" is used twice`},
		{"bad profile", map[string]string{"a/task.json": `{"task": "x", "check": "true", "profile": "gpu"}`}, `profile "gpu"`},
		{"bad egress", map[string]string{"a/task.json": `{"task": "x", "check": "true", "egress": ["http://x/"]}`}, `egress "http://x/"`},
		{"bad duration", map[string]string{"a/task.json": `{"task": "x", "check": "true", "timeout": "soon"}`}, `duration "soon"`},
		{"check timeout too long", map[string]string{"a/task.json": `{"task": "x", "check": "true", "check_timeout": "2h"}`}, "at most 30m"},
		{"workspace outside", map[string]string{"a/task.json": `{"task": "x", "check": "true", "workspace": "../../outside"}`, "../outside/f": "x"}, "outside the suite"},
		{"absolute workspace", map[string]string{"a/task.json": `{"task": "x", "check": "true", "workspace": "/etc"}`}, "relative"},
		{"missing workspace", map[string]string{"a/task.json": `{"task": "x", "check": "true", "workspace": "nope"}`}, `workspace "nope"`},
		{"two documents", map[string]string{"a/task.json": `{"task": "x", "check": "true"} {}`}, "more than one JSON value"},
		{"graded file missing", map[string]string{"a/task.json": `{"task": "x", "check": "true", "graded": ["tests/test_x.py"]}`, "a/workspace/app.py": ""},
			`graded "tests/test_x.py" is not in the task's workspace`},
		{"graded without a workspace", map[string]string{"a/task.json": `{"task": "x", "check": "true", "graded": ["t.py"]}`}, "no workspace to take it from"},
		{"graded outside", map[string]string{"a/task.json": `{"task": "x", "check": "true", "graded": ["../task.json"]}`, "a/workspace/app.py": ""}, `graded "../task.json": give a clean path`},
		{"graded absolute", map[string]string{"a/task.json": `{"task": "x", "check": "true", "graded": ["/etc/passwd"]}`, "a/workspace/app.py": ""}, `graded "/etc/passwd": give a clean path`},
		{"graded twice", map[string]string{"a/task.json": `{"task": "x", "check": "true", "graded": ["tests", "tests/a.py"]}`, "a/workspace/tests/a.py": ""}, "overlaps another graded path"},
		{"refused given", map[string]string{"a/task.json": `{"task": "x", "check": "true", "refused": ["conftest.py"]}`, "a/workspace/conftest.py": ""}, "cannot be refused what it was given"},
		{"refused anywhere given", map[string]string{"a/task.json": `{"task": "x", "check": "true", "refused": ["**/conftest.py"]}`, "a/workspace/tests/conftest.py": ""},
			"the task's workspace has tests/conftest.py"},
		{"refused anywhere with a path", map[string]string{"a/task.json": `{"task": "x", "check": "true", "refused": ["**/tests/conftest.py"]}`}, `refused "**/tests/conftest.py": give **/ and a file or directory name`},
		{"refused graded", map[string]string{"a/task.json": `{"task": "x", "check": "true", "graded": ["tests"], "refused": ["tests/conftest.py"]}`, "a/workspace/tests/a.py": ""}, "overlaps a graded path"},
		{"check files outside", map[string]string{"a/task.json": `{"task": "x", "check": "true", "check_files": "../../hidden"}`, "../hidden/f": "x"}, "outside the suite"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := filepath.Join(t.TempDir(), "s", "suite")
			write(t, root, c.files)
			_, err := eval.Load(root)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Load: %v; want an error containing %q", err, c.want)
			}
		})
	}
}

// A task's grader: graded paths from its workspace (a directory with all
// its files), every file of its check/ directory (used when check_files is
// left out), refused paths.
func TestLoadGraded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"a/task.json":                  `{"task": "x", "check": "true", "graded": ["tests/", "package.json"], "refused": ["node_modules"]}`,
		"a/workspace/tests/a.test.js":  "a",
		"a/workspace/tests/sub/b.js":   "b",
		"a/workspace/package.json":     "{}",
		"a/workspace/src/app.js":       "app",
		"a/check/tests/hidden.test.js": "h",
	})
	s, err := eval.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := s.Tasks[0]
	if !slices.Equal(g.Graded, []string{"tests/", "package.json"}) || !slices.Equal(g.Refused, []string{"node_modules"}) || g.CheckFiles != "check" {
		t.Errorf("task %+v", g)
	}
	if got := g.GraderFiles(); !slices.Equal(got, []string{"package.json", "tests/a.test.js", "tests/hidden.test.js", "tests/sub/b.js"}) {
		t.Errorf("the grader's files %v", got)
	}
}

// A graded file that is a link is refused: the suite gives the file.
func TestLoadRefusesGradedLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, map[string]string{"a/task.json": `{"task": "x", "check": "true", "graded": ["t.py"]}`, "a/workspace/real.py": "x"})
	if err := os.Symlink("real.py", filepath.Join(dir, "a", "workspace", "t.py")); err != nil {
		t.Fatal(err)
	}
	if _, err := eval.Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Load: %v; want the link refused", err)
	}
}

// A graded file behind a link out of the suite is refused: its content
// would travel to the check's sandbox.
func TestLoadRefusesGradedBehindALink(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	write(t, base, map[string]string{"secret/id_rsa": "key", "suite/a/task.json": `{"task": "x", "check": "true", "graded": ["keys/id_rsa"]}`, "suite/a/workspace/app.py": ""})
	if err := os.Symlink(filepath.Join(base, "secret"), filepath.Join(base, "suite", "a", "workspace", "keys")); err != nil {
		t.Fatal(err)
	}
	if _, err := eval.Load(filepath.Join(base, "suite")); err == nil || !strings.Contains(err.Error(), "a parent directory is a link") {
		t.Errorf("Load: %v; want the graded file behind a link refused", err)
	}
}

// A workspace that is a link out of the suite is refused like a path.
func TestLoadRefusesWorkspaceLinkOut(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	write(t, base, map[string]string{"secret/id_rsa": "key", "suite/a/task.json": `{"task": "x", "check": "true"}`})
	if err := os.Symlink(filepath.Join(base, "secret"), filepath.Join(base, "suite", "a", "workspace")); err != nil {
		t.Fatal(err)
	}
	if _, err := eval.Load(filepath.Join(base, "suite")); err == nil || !strings.Contains(err.Error(), "outside the suite") {
		t.Errorf("Load: %v; want the linked workspace refused", err)
	}
}

// Select keeps the named tasks and names the suite's when one is unknown.
func TestSelect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, map[string]string{"a/task.json": `{"task": "x", "check": "true"}`, "b/task.json": `{"task": "x", "check": "true"}`, "c/task.json": `{"task": "x", "check": "true"}`})
	s, err := eval.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Select([]string{"c", "a", "c"}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, t := range s.Tasks {
		ids = append(ids, t.ID)
	}
	if !slices.Equal(ids, []string{"a", "c"}) {
		t.Errorf("selected %v; want [a c]", ids)
	}
	if err := s.Select([]string{"zz"}); err == nil || !strings.Contains(err.Error(), "its tasks: a, c") {
		t.Errorf("unknown task: %v", err)
	}
}

// The starter suite in the repository loads, and every task has a check.
func TestStarterSuiteLoads(t *testing.T) {
	t.Parallel()
	s, err := eval.Load(filepath.Join("..", "evals", "starter"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tasks) < 12 {
		t.Errorf("the starter suite has %d tasks; want the README's three and about ten more", len(s.Tasks))
	}
	for _, want := range []string{"hello-txt", "react-todo", "tk-todo"} {
		if !slices.ContainsFunc(s.Tasks, func(t *eval.Task) bool { return t.ID == want }) {
			t.Errorf("the starter suite lacks %s", want)
		}
	}
	// Every task whose workspace holds tests (or data the check reads)
	// declares them graded.
	for _, task := range s.Tasks {
		dir := task.WorkspaceDir()
		if dir == "" {
			continue
		}
		for _, sub := range []string{"tests", "test", "data", "logs", "package.json", "tsconfig.json", "shop.db"} {
			if _, err := os.Stat(filepath.Join(dir, sub)); err != nil {
				continue
			}
			if !slices.ContainsFunc(task.GraderFiles(), func(f string) bool { return f == sub || strings.HasPrefix(f, sub+"/") }) {
				t.Errorf("task %s: its workspace's %s is not graded", task.ID, sub)
			}
		}
	}
}
