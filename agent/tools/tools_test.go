package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/tools"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/runtime/local"
	"github.com/drydockhq/drydock/toolbox"
	"github.com/google/go-cmp/cmp"
)

// bundle is a real sandbox (runtime/local: an in-process toolboxd over a
// temp dir) and the tools working in it.
type bundle struct {
	set *tools.Set
	ws  string // the workspace on the host
	box *toolbox.Client
	env tools.Env
}

func setup(t testing.TB, mod ...func(*tools.Env)) *bundle {
	t.Helper()
	rt, err := local.New(local.Options{Root: t.TempDir(), ServerID: "tools-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	sb, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "job-tools"})
	if err != nil {
		t.Fatal(err)
	}
	box := toolbox.New(sb.Endpoint, sb.Token)
	t.Cleanup(box.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := box.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := box.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env := tools.Env{Box: box, Workspace: info.Workspace}
	for _, m := range mod {
		m(&env)
	}
	return &bundle{set: tools.New(env), ws: rt.Workspace(sb.ID), box: box, env: env}
}

// call runs a tool with input given as JSON text.
func (b *bundle) call(t *testing.T, name, input string) tools.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	return b.set.Run(ctx, llm.ToolCall{ID: "call_1", Name: name, Input: json.RawMessage(input)})
}

func (b *bundle) write(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(b.ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (b *bundle) read(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.ws, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func want(t *testing.T, r tools.Result, isError bool, substrings ...string) {
	t.Helper()
	if r.IsError != isError {
		t.Errorf("is_error = %v; want %v (output %q)", r.IsError, isError, r.Output)
	}
	for _, s := range substrings {
		if !strings.Contains(r.Output, s) {
			t.Errorf("output %q lacks %q", r.Output, s)
		}
	}
}

func TestDefinitions(t *testing.T) {
	t.Parallel()
	headless := tools.New(tools.Env{})
	if got := strings.Join(headless.Names(), ","); got != "bash,execute_code,finish,recall,str_replace_based_edit_tool" {
		t.Errorf("headless tools %s", got)
	}
	desktop := tools.New(tools.Env{Desktop: true})
	if got := strings.Join(desktop.Names(), ","); got != "bash,computer,execute_code,finish,recall,str_replace_based_edit_tool" {
		t.Errorf("desktop tools %s", got)
	}
	for _, d := range desktop.Defs() {
		var s struct {
			Type       string         `json:"type"`
			Properties map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(d.InputSchema, &s); err != nil || s.Type != "object" || len(s.Properties) == 0 || d.Description == "" {
			t.Errorf("tool %s: schema %s (%v)", d.Name, d.InputSchema, err)
		}
	}
}

func TestUnknownToolAndBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	want(t, b.call(t, "rm_rf", `{}`), true, `no tool named "rm_rf"`, "bash")
	want(t, b.call(t, "bash", `"ls"`), true, "must be a JSON object")
	want(t, b.call(t, "bash", `{"command":42}`), true, "invalid input")
	// What a provider makes of malformed arguments: no command, so nothing
	// runs.
	want(t, b.call(t, "bash", `{"raw_arguments":"{\"comm"}`), true, "no command is running")
}

func TestFinish(t *testing.T) {
	t.Parallel()
	set := tools.New(tools.Env{})
	r := set.Run(t.Context(), llm.ToolCall{Name: "finish", Input: json.RawMessage(`{"summary":"  "}`)})
	want(t, r, true, "summary is required")
	r = set.Run(t.Context(), llm.ToolCall{Name: "finish", Input: json.RawMessage(`{"summary":"Wrote hello.txt."}`)})
	if !r.Finish || r.Summary != "Wrote hello.txt." || r.IsError {
		t.Errorf("finish result %+v", r)
	}
}

func TestBashSessionPersists(t *testing.T) {
	t.Parallel()
	b := setup(t)
	want(t, b.call(t, "bash", `{"command":"mkdir -p sub && cd sub && export GREETING=hi"}`), false, "(no output)")
	want(t, b.call(t, "bash", `{"command":"pwd; echo $GREETING"}`), false, "/sub\n", "hi")
	want(t, b.call(t, "bash", `{"command":"echo oops >&2; exit_code_test() { return 3; }; exit_code_test"}`), false, "oops", "[exit code 3]")
	// A restart forgets the directory and the variable.
	r := b.call(t, "bash", `{"restart":true,"command":"pwd; echo \"[$GREETING]\""}`)
	want(t, r, false, "The shell was restarted.", "[]")
	if strings.Contains(r.Output, "/sub") {
		t.Errorf("restarted shell kept the old directory: %q", r.Output)
	}
}

func TestBashTimeoutThenSessionWorks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	start := time.Now()
	r := b.call(t, "bash", `{"command":"echo started; sleep 20","timeout":1}`)
	want(t, r, true, "started", "timed out after 1s")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("timeout took %s", d)
	}
	want(t, b.call(t, "bash", `{"command":"echo still here"}`), false, "still here")
}

func TestBashQuietCommandKeepsRunning(t *testing.T) {
	t.Parallel()
	b := setup(t, func(e *tools.Env) { e.BashIdleTimeout = 300 * time.Millisecond })
	r := b.call(t, "bash", `{"command":"echo first; sleep 1.5; echo second"}`)
	want(t, r, false, "first", "still running")
	want(t, b.call(t, "bash", `{"command":"echo other"}`), true, "still running in the shell")
	// Waiting with an empty command collects the rest.
	var out string
	for i := 0; i < 20 && !strings.Contains(out, "second"); i++ {
		out += b.call(t, "bash", `{"command":""}`).Output
	}
	if !strings.Contains(out, "second") {
		t.Errorf("waiting never showed the rest: %q", out)
	}
	want(t, b.call(t, "bash", `{"command":""}`), true, "no command is running")
}

func TestBashLongOutputIsSavedWhole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.call(t, "bash", `{"command":"seq 1 200000"}`)
	want(t, r, false, "the whole output is in ")
	if len(r.Output) > 31000 {
		t.Errorf("reply is %d bytes; want it capped", len(r.Output))
	}
	m := regexp.MustCompile(`the whole output is in (\S+)`).FindStringSubmatch(r.Output)
	rel := strings.TrimPrefix(m[1], b.env.Workspace+"/")
	if whole := b.read(t, rel); !strings.HasSuffix(whole, "199999\n200000\n") {
		t.Errorf("saved output %s ends %q", rel, whole[max(len(whole)-20, 0):])
	}
}

func TestEditorView(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.write(t, "src/main.go", "package main\n\nfunc main() {}\n")
	b.write(t, "src/deep/er/x.txt", "x")
	b.write(t, ".git/config", "[core]")
	b.write(t, "README.md", "# hi")

	r := b.call(t, "str_replace_based_edit_tool", js(map[string]any{"command": "view", "path": b.env.Workspace}))
	want(t, r, false, "up to 2 levels deep", b.env.Workspace+"/src/", b.env.Workspace+"/src/main.go", b.env.Workspace+"/README.md", b.env.Workspace+"/src/deep/")
	if strings.Contains(r.Output, ".git") || strings.Contains(r.Output, "er/x.txt") {
		t.Errorf("listing shows hidden or too deep entries:\n%s", r.Output)
	}
	r = b.call(t, "str_replace_based_edit_tool", `{"command":"view","path":"src/main.go"}`)
	want(t, r, false, "     1\tpackage main\n     2\t\n     3\tfunc main() {}")
	r = b.call(t, "str_replace_based_edit_tool", `{"command":"view","path":"src/main.go","view_range":[3,-1]}`)
	want(t, r, false, "     3\tfunc main() {}")
	if strings.Contains(r.Output, "package") {
		t.Errorf("view_range [3,-1] showed line 1: %q", r.Output)
	}
	want(t, b.call(t, "str_replace_based_edit_tool", `{"command":"view","path":"src/main.go","view_range":[2,9]}`), true, "should be smaller than the number of lines")
	want(t, b.call(t, "str_replace_based_edit_tool", `{"command":"view","path":"nope.txt"}`), true, "does not exist")
	want(t, b.call(t, "str_replace_based_edit_tool", `{"command":"view","path":"/etc/passwd"}`), true)
	want(t, b.call(t, "str_replace_based_edit_tool", `{"command":"paint","path":"x"}`), true, "Unrecognized command")
}

func TestEditorEditAndUndo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ed := "str_replace_based_edit_tool"
	want(t, b.call(t, ed, `{"command":"create","path":"app.py","file_text":"a = 1\nb = 2\na = 1\n"}`), false, "File created successfully")
	want(t, b.call(t, ed, `{"command":"create","path":"app.py","file_text":"x"}`), true, "File already exists")
	want(t, b.call(t, ed, `{"command":"str_replace","path":"app.py","old_str":"c = 3","new_str":"d"}`), true, "did not appear verbatim")
	want(t, b.call(t, ed, `{"command":"str_replace","path":"app.py","old_str":"a = 1","new_str":"d"}`), true, "Multiple occurrences", "[1 3]")
	r := b.call(t, ed, `{"command":"str_replace","path":"app.py","old_str":"b = 2\n","new_str":"b = 20\nc = 30\n"}`)
	want(t, r, false, "has been edited", "     2\tb = 20", "     3\tc = 30")
	if got := b.read(t, "app.py"); got != "a = 1\nb = 20\nc = 30\na = 1\n" {
		t.Errorf("after str_replace: %q", got)
	}
	want(t, b.call(t, ed, `{"command":"insert","path":"app.py","insert_line":0,"new_str":"# top"}`), false, "     1\t# top")
	want(t, b.call(t, ed, `{"command":"insert","path":"app.py","insert_line":5,"new_str":"end = True\n"}`), false, "     6\tend = True")
	want(t, b.call(t, ed, `{"command":"insert","path":"app.py","insert_line":99,"new_str":"x"}`), true, "[0, 6]")
	if got := b.read(t, "app.py"); got != "# top\na = 1\nb = 20\nc = 30\na = 1\nend = True\n" {
		t.Errorf("after inserts: %q", got)
	}
	// Undo walks back one edit at a time, down to the creation.
	for _, wantContent := range []string{"# top\na = 1\nb = 20\nc = 30\na = 1\n", "a = 1\nb = 20\nc = 30\na = 1\n", "a = 1\nb = 2\na = 1\n"} {
		want(t, b.call(t, ed, `{"command":"undo_edit","path":"app.py"}`), false, "undone successfully")
		if got := b.read(t, "app.py"); got != wantContent {
			t.Errorf("after undo: %q; want %q", got, wantContent)
		}
	}
	want(t, b.call(t, ed, `{"command":"undo_edit","path":"app.py"}`), false, "was removed")
	if _, err := os.Stat(filepath.Join(b.ws, "app.py")); !os.IsNotExist(err) {
		t.Errorf("undoing the create left the file: %v", err)
	}
	want(t, b.call(t, ed, `{"command":"undo_edit","path":"app.py"}`), true, "No edit history")
}

func TestEditorInsertIntoFileWithoutFinalNewline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.write(t, "f.txt", "one\ntwo")
	want(t, b.call(t, "str_replace_based_edit_tool", `{"command":"insert","path":"f.txt","insert_line":2,"new_str":"three"}`), false)
	if got := b.read(t, "f.txt"); got != "one\ntwo\nthree\n" {
		t.Errorf("got %q", got)
	}
}

func TestEditorUndoAfterResumeSaysHistoryIsLost(t *testing.T) {
	t.Parallel()
	b := setup(t, func(e *tools.Env) { e.Resumed = true })
	b.write(t, "f.txt", "x")
	want(t, b.call(t, "str_replace_based_edit_tool", `{"command":"undo_edit","path":"f.txt"}`), true, "lost when the agent restarted")
}

// The local runtime has no code runner and no desktop; the tools say so
// instead of failing the run. (Their success paths need the real sandbox
// image: see agent's docker test.)
func TestCodeAndDesktopUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t, func(e *tools.Env) { e.Desktop = true })
	want(t, b.call(t, "execute_code", `{"language":"python","code":"print(1)"}`), true, "not available in this sandbox")
	want(t, b.call(t, "execute_code", `{"language":"cobol","code":"x"}`), true, "python, javascript or typescript")
	want(t, b.call(t, "computer", `{"action":"screenshot"}`), true, "no desktop")
	want(t, b.call(t, "computer", `{"action":"left_click","coordinate":[10]}`), true, "coordinate must be [x, y]")
	want(t, b.call(t, "computer", `{"action":"type"}`), true, "type needs text")
	want(t, b.call(t, "computer", `{"action":"fly"}`), true, "unknown action")
}

func TestRecall(t *testing.T) {
	t.Parallel()
	var queries []string
	set := tools.New(tools.Env{Recall: func(_ context.Context, q string) (string, error) {
		queries = append(queries, q)
		if q == "broken" {
			return "", errors.New("the index is gone")
		}
		return "--- step 2, bash result ---\nCannot find module 'left-pad'", nil
	}})
	run := func(input string) tools.Result {
		return set.Run(t.Context(), llm.ToolCall{Name: "recall", Input: json.RawMessage(input)})
	}
	want(t, run(`{"query":"left-pad module"}`), false, "step 2, bash result", "Cannot find module 'left-pad'")
	want(t, run(`{"query":"broken"}`), true, "recall: the index is gone")
	want(t, run(`{"query":"  "}`), true, "query is required")
	want(t, run(`{"query":"?!"}`), true, "query is required")
	want(t, run(`{"query":7}`), true, "recall: invalid input")
	if diff := cmp.Diff([]string{"left-pad module", "broken"}, queries); diff != "" {
		t.Errorf("queries (-want +got):\n%s", diff)
	}
	want(t, tools.New(tools.Env{}).Run(t.Context(), llm.ToolCall{Name: "recall", Input: json.RawMessage(`{"query":"x"}`)}), true, "no history")
}
