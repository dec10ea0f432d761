package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
)

// Suite is a set of tasks scored together.
type Suite struct {
	// Name is the suite's name: its "name" field, else the base name of
	// its directory or file (without .json).
	Name  string
	Tasks []*Task
}

// Task is one task of a suite: what the agent is asked, where it starts,
// its limits, and the shell command that decides whether it succeeded.
type Task struct {
	ID       string           `json:"id"`
	Task     string           `json:"task"`
	Profile  drydock.Profile  `json:"profile,omitempty"`
	MaxSteps int              `json:"max_steps,omitempty"`
	Timeout  drydock.Duration `json:"timeout,omitempty"`
	// Egress is the job's list; nil leaves it to the server's
	// --egress-default (how a suite reaches a package registry without
	// naming one), [] is none.
	Egress []string `json:"egress,omitempty"`
	// Workspace is a directory, relative to the task's file, uploaded as
	// the job's starting workspace. A task directory's "workspace"
	// subdirectory is used when the field is left out.
	Workspace string `json:"workspace,omitempty"`
	// Check runs with bash in /workspace of a fresh sandbox holding the
	// finished workspace; exit status 0 is a pass.
	Check        string           `json:"check"`
	CheckTimeout drydock.Duration `json:"check_timeout,omitempty"`
	// CheckEgress is what the check's sandbox may reach; none by default,
	// so that a check measures what the agent left, not the network.
	CheckEgress []string `json:"check_egress,omitempty"`
	// Graded names files and directories of the task's workspace that the
	// grader owns (the tests, their configuration): before the check they
	// are put back as the suite has them, replacing whatever the agent
	// left, a directory whole (what the agent added in it is removed).
	Graded []string `json:"graded,omitempty"`
	// Refused names paths the agent must not leave (a conftest.py, a
	// node_modules of dependencies it was told not to add): removed before
	// the check. "**/NAME" refuses NAME at any depth (**/conftest.py).
	Refused []string `json:"refused,omitempty"`
	// CheckFiles is a directory, relative to the task's file, whose files
	// are written into the workspace for the check only (hidden tests):
	// the agent never sees them. A task directory's "check" subdirectory
	// is used when the field is left out.
	CheckFiles string `json:"check_files,omitempty"`

	// dir is the resolved workspace directory, "" for an empty workspace.
	dir string
	// grader is what the check's guard restores, refuses and compares.
	grader grader
}

// WorkspaceDir is the directory uploaded as the task's workspace, "" when
// it starts empty.
func (t *Task) WorkspaceDir() string { return t.dir }

const (
	// DefaultCheckTimeout bounds a check that gives no check_timeout.
	DefaultCheckTimeout = 5 * time.Minute
	// maxCheckTimeout is the API's bound on a held sandbox's command.
	maxCheckTimeout = 30 * time.Minute
	// TaskFile names a task in a suite directory: <suite>/<task>/task.json.
	TaskFile    = "task.json"
	maxTaskFile = 1 << 20
)

var taskID = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// Load reads a suite: a directory whose subdirectories each hold a
// task.json (the subdirectory's name is the task's id unless it gives
// one), or a JSON file {"name"?, "tasks": [...]}. Every task is checked;
// the error names the file and the field.
func Load(path string) (*Suite, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	if fi.IsDir() {
		return loadDir(path)
	}
	return loadFile(path)
}

func loadDir(dir string) (*Suite, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("suite %s: %w", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("suite %s: %w", dir, err)
	}
	s := &Suite{Name: filepath.Base(abs)}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		file := filepath.Join(dir, e.Name(), TaskFile)
		if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
			continue // a directory of shared files, not a task
		}
		var t Task
		if err := decodeFile(file, &t); err != nil {
			return nil, err
		}
		if t.ID == "" {
			t.ID = e.Name()
		}
		if t.Workspace == "" {
			if fi, err := os.Stat(filepath.Join(dir, e.Name(), "workspace")); err == nil && fi.IsDir() {
				t.Workspace = "workspace"
			}
		}
		if t.CheckFiles == "" {
			if fi, err := os.Stat(filepath.Join(dir, e.Name(), "check")); err == nil && fi.IsDir() {
				t.CheckFiles = "check"
			}
		}
		if err := t.resolve(dir, filepath.Join(dir, e.Name())); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		s.Tasks = append(s.Tasks, &t)
	}
	if len(s.Tasks) == 0 {
		return nil, fmt.Errorf("suite %s has no tasks: each task is a subdirectory holding a %s", dir, TaskFile)
	}
	return s, s.checkIDs(dir)
}

func loadFile(file string) (*Suite, error) {
	var doc struct {
		Name  string  `json:"name"`
		Tasks []*Task `json:"tasks"`
	}
	if err := decodeFile(file, &doc); err != nil {
		return nil, err
	}
	s := &Suite{Name: doc.Name, Tasks: doc.Tasks}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(file), ".json")
	}
	if len(s.Tasks) == 0 {
		return nil, fmt.Errorf("%s has no tasks: give {\"tasks\": [{\"id\", \"task\", \"check\"}, ...]}", file)
	}
	dir := filepath.Dir(file)
	for i, t := range s.Tasks {
		if t == nil {
			return nil, fmt.Errorf("%s: tasks[%d] is null", file, i)
		}
		if t.ID == "" {
			return nil, fmt.Errorf("%s: tasks[%d] has no id", file, i)
		}
		if err := t.resolve(dir, dir); err != nil {
			return nil, fmt.Errorf("%s: task %q: %w", file, t.ID, err)
		}
	}
	return s, s.checkIDs(file)
}

// decodeFile decodes one JSON document strictly: unknown fields are
// refused (a misspelt "check_timout" must not silently use the default).
func decodeFile(file string, v any) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("suite: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTaskFile+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	if len(data) > maxTaskFile {
		return fmt.Errorf("%s is larger than %d bytes", file, maxTaskFile)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if dec.More() {
		return fmt.Errorf("%s: more than one JSON value", file)
	}
	return nil
}

// resolve checks the task, finds its workspace and check directories and
// reads the files its grader owns.
func (t *Task) resolve(root, base string) error {
	t.Task = strings.TrimSpace(t.Task)
	t.Check = strings.TrimSpace(t.Check)
	switch {
	case !taskID.MatchString(t.ID):
		return fmt.Errorf("id %q: use 1 to 64 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit", t.ID)
	case t.Task == "":
		return errors.New(`"task" is required: what the agent is asked to do`)
	case t.Check == "":
		return errors.New(`"check" is required: a shell command run in the finished workspace, exit 0 for a pass`)
	case t.Profile != "" && !t.Profile.Valid():
		return fmt.Errorf("profile %q: use %q or %q", t.Profile, drydock.ProfileHeadless, drydock.ProfileDesktop)
	case t.MaxSteps < 0:
		return fmt.Errorf("max_steps %d: must be positive", t.MaxSteps)
	case t.Timeout < 0:
		return fmt.Errorf("timeout %s: must be positive", time.Duration(t.Timeout))
	case t.CheckTimeout < 0 || time.Duration(t.CheckTimeout) > maxCheckTimeout:
		return fmt.Errorf("check_timeout %s: must be positive and at most %s", time.Duration(t.CheckTimeout), maxCheckTimeout)
	}
	for _, e := range slices.Concat(t.Egress, t.CheckEgress) {
		if _, err := drydock.ParseEgressRule(e); err != nil {
			return fmt.Errorf("egress %q: %s", e, drydock.ErrorMessage(err))
		}
	}
	if t.Workspace != "" {
		dir, err := suiteDir(root, base, "workspace", t.Workspace)
		if err != nil {
			return err
		}
		t.dir = dir
	}
	checkDir := ""
	if t.CheckFiles != "" {
		dir, err := suiteDir(root, base, "check_files", t.CheckFiles)
		if err != nil {
			return err
		}
		checkDir = dir
	}
	return t.resolveGrader(checkDir)
}

// suiteDir resolves a directory a task names, which must lie within the
// suite's root (a suite shared as a directory must not upload files from
// elsewhere on the machine that runs it).
func suiteDir(root, base, field, name string) (string, error) {
	if filepath.IsAbs(name) {
		return "", fmt.Errorf("%s %q: give a directory relative to the task's file", field, name)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(base, name))
	if err != nil {
		return "", fmt.Errorf("%s %q: %w", field, name, err)
	}
	rootAbs, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("suite root %s: %w", root, err)
	}
	if rel, err := filepath.Rel(rootAbs, dir); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s %q is outside the suite's directory %s", field, name, root)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s %q is not a directory", field, name)
	}
	return dir, nil
}

func (s *Suite) checkIDs(where string) error {
	seen := map[string]bool{}
	for _, t := range s.Tasks {
		if seen[t.ID] {
			return fmt.Errorf("%s: task id %q is used twice", where, t.ID)
		}
		seen[t.ID] = true
	}
	slices.SortFunc(s.Tasks, func(a, b *Task) int { return strings.Compare(a.ID, b.ID) })
	return nil
}

// Select keeps the tasks whose ids are listed, in the suite's order; an id
// that is not in the suite is an error naming the suite's ids.
func (s *Suite) Select(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	var keep []*Task
	for _, id := range ids {
		i := slices.IndexFunc(s.Tasks, func(t *Task) bool { return t.ID == id })
		if i < 0 {
			var all []string
			for _, t := range s.Tasks {
				all = append(all, t.ID)
			}
			return fmt.Errorf("suite %s has no task %q; its tasks: %s", s.Name, id, strings.Join(all, ", "))
		}
		if !slices.Contains(keep, s.Tasks[i]) {
			keep = append(keep, s.Tasks[i])
		}
	}
	slices.SortFunc(keep, func(a, b *Task) int { return strings.Compare(a.ID, b.ID) })
	s.Tasks = keep
	return nil
}
