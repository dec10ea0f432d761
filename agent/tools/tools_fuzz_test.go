package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/tools"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/toolbox"
)

// inertBox answers every call without doing anything, so that fuzzed bash
// commands and code never run on the host.
type inertBox struct{}

func (inertBox) CreateSession(context.Context, toolbox.SessionRequest) (*toolbox.Session, error) {
	return &toolbox.Session{ID: "agent"}, nil
}
func (inertBox) RestartSession(context.Context, string) (*toolbox.Session, error) {
	return &toolbox.Session{ID: "agent"}, nil
}
func (inertBox) Run(context.Context, string, toolbox.RunRequest) (*toolbox.RunResult, error) {
	return &toolbox.RunResult{Output: "ran"}, nil
}
func (inertBox) ReadFile(context.Context, string) ([]byte, error) { return []byte("line\n"), nil }
func (inertBox) ReadLines(context.Context, string, int, int) ([]byte, int, error) {
	return []byte("line\n"), 1, nil
}
func (inertBox) WriteFile(context.Context, string, []byte) error { return nil }
func (inertBox) Stat(_ context.Context, p string) (*toolbox.FileInfo, error) {
	return &toolbox.FileInfo{Name: filepath.Base(p), Path: p, Type: toolbox.TypeFile, Size: 5}, nil
}
func (inertBox) ListDepth(context.Context, string, int) (*toolbox.ListResult, error) {
	return &toolbox.ListResult{}, nil
}
func (inertBox) Delete(context.Context, string, bool) error { return nil }
func (inertBox) RunCode(context.Context, toolbox.CodeRequest) (*toolbox.CodeResult, error) {
	return &toolbox.CodeResult{}, nil
}
func (inertBox) Screenshot(context.Context) (*toolbox.Screenshot, error) {
	return nil, drydock.Errorf(drydock.ENOTIMPLEMENTED, "no desktop")
}
func (inertBox) DesktopAction(context.Context, toolbox.DesktopAction) (*toolbox.DesktopResult, error) {
	return nil, drydock.Errorf(drydock.ENOTIMPLEMENTED, "no desktop")
}

// FuzzToolCall: a model may call any name with any input. Every call
// returns (no panic, no hang) with something for the model to read; input
// that is not a JSON object is an error result; only finish with a
// non-blank summary finishes.
func FuzzToolCall(f *testing.F) {
	for _, s := range [][2]string{
		{"bash", `{"command": "ls"}`}, {"bash", `{"command": 1}`}, {"bash", `{"restart": true}`}, {"bash", `{"command": "x", "timeout": -5}`},
		{"str_replace_based_edit_tool", `{"command": "view", "path": "/workspace"}`},
		{"str_replace_based_edit_tool", `{"command": "str_replace", "path": "a", "old_str": "", "new_str": null}`},
		{"str_replace_based_edit_tool", `{"command": "insert", "path": "a", "insert_line": -1, "new_str": "x"}`},
		{"str_replace_based_edit_tool", `{"command": "view", "path": "a", "view_range": [5, 1, 9]}`},
		{"computer", `{"action": "left_click", "coordinate": [1e99, -1]}`}, {"computer", `{"action": "type"}`},
		{"execute_code", `{"language": "cobol", "code": ""}`}, {"recall", `{"query": ""}`},
		{"finish", `{"summary": "  "}`}, {"finish", `{"summary": "done"}`}, {"finish", `[]`}, {"nope", `{}`},
		{"bash", `null`}, {"bash", `"ls"`}, {"bash", `{"command": "ls"}{}`}, {"", ``}, {"bash", `{"command": "\u0000"}`},
	} {
		f.Add(s[0], s[1])
	}
	set := tools.New(tools.Env{Box: inertBox{}, Workspace: "/workspace", Desktop: true, SettleDelay: time.Millisecond,
		Recall: func(context.Context, string) (string, error) { return "nothing", nil }})
	f.Fuzz(func(t *testing.T, name, input string) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		r := set.Run(ctx, llm.ToolCall{ID: "call_1", Name: name, Input: json.RawMessage(input)})
		if ctx.Err() != nil {
			t.Fatalf("%s %q did not return within 10s", name, input)
		}
		if strings.TrimSpace(r.Output) == "" && len(r.Images) == 0 && !r.Finish {
			t.Fatalf("%s %q: empty result %+v", name, input, r)
		}
		var obj map[string]json.RawMessage
		if (json.Unmarshal([]byte(input), &obj) != nil || obj == nil) && !r.IsError {
			t.Fatalf("%s %q: input is not an object but the call succeeded: %q", name, input, r.Output)
		}
		if r.Finish && (name != tools.NameFinish || r.IsError || strings.TrimSpace(r.Summary) == "") {
			t.Fatalf("%s %q finished: %+v", name, input, r)
		}
	})
}

// FuzzEditorPath: whatever path the model gives the editor, with any
// command, a real toolboxd reads and writes nothing outside the workspace,
// even through links that lead out.
func FuzzEditorPath(f *testing.F) {
	for _, s := range [][2]string{
		{"view", "/etc/passwd"}, {"view", "../outside/secret.txt"}, {"create", "../outside/new.txt"}, {"view", "dirlink"},
		{"str_replace", "abslink"}, {"insert", "rellink"}, {"create", "dirlink/x.txt"}, {"view", "sub/up/outside/secret.txt"},
		{"undo_edit", "abslink"}, {"view", "/"}, {"create", "/tmp/x"}, {"view", "sub/../../outside"}, {"create", "ok.txt"},
	} {
		f.Add(s[0], s[1])
	}
	b := setup(f)
	ws := b.ws
	outside := filepath.Join(f.TempDir(), "outside")
	secret := filepath.Join(outside, "secret.txt")
	const marker = "OUTSIDE-THE-WORKSPACE-91c2"
	if err := os.MkdirAll(outside, 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte(marker+"\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	for link, target := range map[string]string{"abslink": secret, "dirlink": outside, "rellink": relTo(ws, secret)} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, command, path string) {
		input, _ := json.Marshal(map[string]any{
			"command": command, "path": path, "file_text": "pwned\n", "old_str": marker, "new_str": "pwned", "insert_line": 0,
		})
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		r := b.set.Run(ctx, llm.ToolCall{ID: "call_1", Name: tools.NameEditor, Input: input})
		// str_replace's miss quotes old_str back, as the reference editor
		// does; that echo of the input is not a read.
		if strings.Contains(strings.ReplaceAll(r.Output, "old_str `"+marker+"`", ""), marker) {
			t.Fatalf("editor %s %q read outside the workspace: %q", command, path, r.Output)
		}
		got, err := os.ReadDir(outside)
		if err != nil || len(got) != 1 {
			t.Fatalf("editor %s %q changed the outside directory: %v %v", command, path, got, err)
		}
		if data, err := os.ReadFile(secret); err != nil || string(data) != marker+"\n" {
			t.Fatalf("editor %s %q changed a file outside: %q %v", command, path, data, err)
		}
	})
}

func relTo(base, target string) string {
	r, err := filepath.Rel(base, target)
	if err != nil {
		panic(err)
	}
	return r
}
