package drydock_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

// Every kind of event the root package names has a payload type: a kind
// added without one fails here, not in a reader.
func TestEveryEventTypeHasADataType(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var kinds []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || vs.Type == nil {
				return true
			}
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "EventType" {
				return true
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok {
					s, _ := strconv.Unquote(lit.Value)
					kinds = append(kinds, s)
				}
			}
			return true
		})
	}
	if len(kinds) < 10 {
		t.Fatalf("found only %d EventType constants: %v", len(kinds), kinds)
	}
	for _, k := range kinds {
		if _, ok := drydock.EventDataTypes[drydock.EventType(k)]; !ok {
			t.Errorf("event type %q has no entry in EventDataTypes", k)
		}
	}
	if len(drydock.EventDataTypes) != len(kinds) {
		t.Errorf("EventDataTypes has %d kinds, the package declares %d: %v", len(drydock.EventDataTypes), len(kinds), kinds)
	}
}

// The payloads that servers have stored (and so old databases hold) are
// their kind's type exactly; CheckEventData refuses anything else.
func TestCheckEventData(t *testing.T) {
	t.Parallel()
	good := []struct {
		typ  drydock.EventType
		data string
	}{
		{drydock.EventStatus, `{"status":"pending"}`},
		{drydock.EventStatus, `{"status":"running","node":"n1"}`},
		{drydock.EventStatus, `{"status":"error","error":"the sandbox's toolbox stopped answering"}`},
		{drydock.EventLog, `{"level":"info","message":"sandbox s1 runs under gVisor","kind":"sandbox","sandbox_id":"s1","isolation":"gvisor"}`},
		{drydock.EventLog, `{"level":"info","message":"m","notice":true,"kind":"message_delivered","seq":3,"step":2,"from":"ci"}`},
		{drydock.EventLog, `{"level":"info","message":"The agent asks: ?","kind":"ask_user","question":"?","step":1}`},
		{drydock.EventLog, `{"level":"info","message":"m","kind":"context_mask","through_step":4,"tokens_before":900,"tokens_after":300,"budget":1000}`},
		{drydock.EventLog, `{"level":"info","seed":"upload","files":2,"dirs":1,"links":0,"bytes":10,"message":"workspace seeded"}`},
		{drydock.EventLog, `{"level":"info","message":"m","egress":{"list":[],"added":null,"removed":["a:443"],"by":"tok"}}`},
		{drydock.EventLog, `{"level":"warn","message":"m","egress":{"dest":"a:443","status":403,"reason":"not listed","not_recorded":0}}`},
		{drydock.EventLog, `{"level":"info","kind":"caller_command","command":"ls","exit_code":0,"output_bytes":3,"message":"m"}`},
		{drydock.EventModel, `{"step":1,"model":"m","thinking":[{"thinking":"t","signature":"s"}],"text":"hi","tool_calls":[{"id":"c1","name":"bash","input":{"command":"ls"}}],"stop_reason":"tool_use","state":{"provider":"openai","data":{}}}`},
		{drydock.EventModel, `{"text":"Step 1: I will write notes/step-001.md."}`},
		{drydock.EventToolCall, `{"step":1,"id":"c1","name":"bash","input":{"command":"ls"}}`},
		{drydock.EventObservation, `{"step":1,"id":"c1","name":"computer","output":"","images":[{"path":".drydock/shots/1.png","media_type":"image/png","width":1280,"height":800}]}`},
		{drydock.EventUsage, `{"input_tokens":10,"output_tokens":2,"cost_usd":0.01}`},
		{drydock.EventUsage, `{"input_tokens":10,"output_tokens":2,"cost_usd":0,"step":1,"model":"m","cost_known":false,"prompt_counted":9,"prompt_estimate":10,"context_budget":100}`},
		{drydock.EventError, `{"message":"boom"}`},
		{drydock.EventCondensation, `{"kind":"summary","summary":"s","from_step":1,"through_step":3,"depth":1,"tokens_before":9,"tokens_after":3,"budget":10,"usage":{"input_tokens":5,"output_tokens":1},"model":"m"}`},
		{drydock.EventArtifact, `{"size":1234,"format":"tar.gz"}`},
		{drydock.EventSummary, `{"summary":"done"}`},
		{drydock.EventTask, `{"text":"t","status":"complete","error":""}`},
		{drydock.EventUserMessage, `{"text":"hi","from":"ci"}`},
		{drydock.EventPaused, `{"reason":"user","by":"ci"}`},
		{drydock.EventResumed, `{"reason":"control","by":"ci","from":"2026-01-01T00:00:00Z","to":"2026-01-01T00:00:05Z","seconds":5,"expired":true}`},
		{drydock.EventObservation, `{"message":"` + drydock.EventHiddenMessage + `"}`},
	}
	for _, c := range good {
		if err := drydock.CheckEventData(c.typ, []byte(c.data)); err != nil {
			t.Errorf("CheckEventData(%s, %s) = %v, want nil", c.typ, c.data, err)
		}
		if _, err := drydock.DecodeEventData(c.typ, []byte(c.data)); err != nil {
			t.Errorf("DecodeEventData(%s, %s) = %v", c.typ, c.data, err)
		}
	}
	bad := []struct {
		name string
		typ  drydock.EventType
		data string
	}{
		{"a field the type lacks (what event.go once promised)", drydock.EventArtifact, `{"size":1,"files":3}`},
		{"a field of the wrong type", drydock.EventArtifact, `{"size":"big"}`},
		{"a field of another kind", drydock.EventSummary, `{"summary":"s","message":"m"}`},
		{"a string, not an object", drydock.EventLog, `"hello"`},
		{"null", drydock.EventLog, `null`},
		{"nothing", drydock.EventLog, ``},
		{"two objects", drydock.EventError, `{"message":"a"}{"message":"b"}`},
		{"an unknown kind", "telepathy", `{}`},
		{"a nested field the type lacks", drydock.EventLog, `{"message":"m","egress":{"list":[],"owner":"x"}}`},
	}
	for _, c := range bad {
		if err := drydock.CheckEventData(c.typ, []byte(c.data)); err == nil {
			t.Errorf("%s: CheckEventData(%s, %s) = nil, want an error", c.name, c.typ, c.data)
		}
	}
}

// A command's exit code 0 is written, not left out as a zero: an eval's
// check reads it from the log.
func TestLogEventKeepsExitCodeZero(t *testing.T) {
	t.Parallel()
	zero := 0
	b, err := json.Marshal(drydock.LogEvent{Level: "info", Kind: "caller_command", Message: "m", ExitCode: &zero})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"exit_code":0`) {
		t.Fatalf("encoded %s, want exit_code 0 in it", b)
	}
}

// Readers decode whatever a newer writer added, and name the kind in
// their error for data that is not even JSON.
func TestDecodeEventData(t *testing.T) {
	t.Parallel()
	v, err := drydock.DecodeEventData(drydock.EventArtifact, []byte(`{"size":7,"format":"tar.gz","later":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := v.(*drydock.ArtifactEvent); !ok || a.Size != 7 || a.Format != "tar.gz" {
		t.Fatalf("decoded %#v", v)
	}
	if _, err := drydock.DecodeEventData(drydock.EventLog, []byte(`{`)); drydock.ErrorCode(err) != drydock.EINVALID || !strings.Contains(err.Error(), "log") {
		t.Fatalf("bad JSON: %v", err)
	}
	if _, err := drydock.DecodeEventData("telepathy", []byte(`{}`)); drydock.ErrorCode(err) != drydock.EINVALID {
		t.Fatalf("unknown kind: %v", err)
	}
}

// A reader decodes an event's data into its kind's type.
func ExampleDecodeEventData() {
	e := drydock.NewEvent("job-1", drydock.EventArtifact, drydock.ArtifactEvent{Size: 2048, Format: "tar.gz"})
	d, err := drydock.DecodeEventData(e.Type, e.Data)
	if err != nil {
		panic(err)
	}
	switch d := d.(type) {
	case *drydock.ArtifactEvent:
		fmt.Printf("archived %d bytes as %s\n", d.Size, d.Format)
	}
	// Output: archived 2048 bytes as tar.gz
}

// LogKind reads a log event's kind, whatever else the event holds; a
// message that quotes a kind is not one.
func TestLogKind(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		e    *drydock.Event
		want string
	}{
		{drydock.NewEvent("j", drydock.EventLog, drydock.LogEvent{Level: "info", Kind: drydock.LogSandboxHeld, SandboxID: "s", Message: "ready"}), drydock.LogSandboxHeld},
		{drydock.NewEvent("j", drydock.EventLog, drydock.LogEvent{Level: "info", Message: `{"kind":"sandbox_held"}`}), ""},
		{drydock.NewEvent("j", drydock.EventError, drydock.LogEvent{Kind: drydock.LogSandboxHeld}), ""},
		{&drydock.Event{Type: drydock.EventLog, Data: []byte(`"x"`)}, ""},
	} {
		if got := drydock.LogKind(c.e); got != c.want {
			t.Errorf("LogKind(%s %s) = %q, want %q", c.e.Type, c.e.Data, got, c.want)
		}
	}
}
