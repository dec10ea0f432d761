package mcp

import (
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// get_events' lines read each kind's payload type: what the runner and
// the agent write, by field.
func TestFormatEventReadsThePayloadTypes(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		typ  drydock.EventType
		data any
		want string
	}{
		{drydock.EventStatus, drydock.StatusEvent{Status: drydock.StatusError, Error: "boom"}, "status: error: boom"},
		{drydock.EventModel, drydock.ModelEvent{Text: "look", ToolCalls: []drydock.ModelToolCall{{ID: "c1", Name: "bash", Input: []byte(`{"command": "ls"}`)}}}, "model: look → calls bash"},
		{drydock.EventToolCall, drydock.ToolCallEvent{ID: "c1", Name: "bash", Input: []byte(`{"command": "ls"}`)}, `tool_call: bash {"command":"ls"}`},
		{drydock.EventObservation, drydock.ObservationEvent{ID: "c1", Name: "bash", Output: "nope", IsError: true}, "observation: bash (error): nope"},
		{drydock.EventUsage, drydock.UsageEvent{Usage: drydock.Usage{InputTokens: 1200000, OutputTokens: 3}}, "usage: in 1200000, out 3 tokens"},
		{drydock.EventArtifact, drydock.ArtifactEvent{Size: 2048, Format: "tar.gz"}, "artifact: workspace archived (2048 bytes)"},
		{drydock.EventCondensation, drydock.CondensationEvent{Kind: "summary", Summary: "set up", FromStep: 1, ThroughStep: 9}, "condensation: steps 1 to 9 summarized: set up"},
		{drydock.EventLog, drydock.LogEvent{Level: "info", Kind: "sandbox", Message: "runs under gVisor"}, "log: sandbox: runs under gVisor"},
		{drydock.EventError, drydock.ErrorEvent{Message: "cut short"}, "error: cut short"},
		{"future", map[string]int{"x": 1}, `future: {"x":1}`},
	} {
		e := drydock.NewEvent("j", c.typ, c.data)
		e.Seq, e.Time = 7, at
		if got, want := formatEvent(e), "#7 03:04:05 "+c.want; !strings.HasPrefix(got, want) {
			t.Errorf("%s: %q, want %q", c.typ, got, want)
		}
	}
}
