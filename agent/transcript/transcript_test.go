package transcript

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/google/go-cmp/cmp"
)

func ev(typ drydock.EventType, v any) *drydock.Event {
	return drydock.NewEvent("j", typ, v)
}

func calls(ids ...string) []llm.ToolCall {
	var out []llm.ToolCall
	for _, id := range ids {
		out = append(out, llm.ToolCall{ID: id, Name: "bash", Input: json.RawMessage(`{"command":"ls"}`)})
	}
	return out
}

func TestMessages(t *testing.T) {
	t.Parallel()
	events := []*drydock.Event{
		ev(drydock.EventStatus, map[string]string{"status": "running"}),
		ev(drydock.EventLog, map[string]string{"level": "info", "message": "resuming on node-1"}), // for people only
		ev(drydock.EventModel, ModelTurn{Step: 1, Text: "Looking.", ToolCalls: calls("a", "b")}),
		ev(drydock.EventUsage, map[string]int{"input_tokens": 10}),
		ev(drydock.EventToolCall, ToolCall{ID: "a", Name: "bash"}),
		// Results arrive out of order; the prompt answers in call order.
		ev(drydock.EventObservation, Observation{ID: "b", Name: "bash", Output: "B", IsError: true}),
		ev(drydock.EventObservation, Observation{ID: "a", Name: "bash", Output: "A"}),
		ev(drydock.EventObservation, Observation{ID: "zzz", Name: "bash", Output: "stray"}),
		ev(drydock.EventLog, Notice{Level: "warn", Message: "Careful.", Notice: true}),
		ev(drydock.EventModel, ModelTurn{Step: 2, Text: "Hmm."}),
		ev(drydock.EventLog, Notice{Level: "warn", Message: "Use the tools.", Notice: true}),
		ev(drydock.EventModel, ModelTurn{Step: 3}), // empty: nothing to show
		ev(drydock.EventLog, Notice{Level: "warn", Message: "Really.", Notice: true}),
		ev(drydock.EventModel, ModelTurn{Step: 4, ToolCalls: calls("c")}),
		// c was cut short by a restart: no observation.
	}
	got := Messages(events, Options{Task: "Do it."})
	want := []llm.Message{
		{Role: llm.RoleUser, Text: "Do it."},
		{Role: llm.RoleAssistant, Text: "Looking.", ToolCalls: calls("a", "b")},
		{Role: llm.RoleUser, ToolResults: []llm.ToolResult{
			{CallID: "a", Name: "bash", Output: "A"},
			{CallID: "b", Name: "bash", Output: "B", IsError: true},
		}, Text: "Careful."},
		{Role: llm.RoleAssistant, Text: "Hmm."},
		{Role: llm.RoleUser, Text: "Use the tools.\n\nReally."},
		{Role: llm.RoleAssistant, ToolCalls: calls("c")},
		{Role: llm.RoleUser, ToolResults: []llm.ToolResult{{CallID: "c", Name: "bash", IsError: true,
			Output: "This tool call was interrupted before it returned; its effect is unknown. Check the state before repeating it."}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestMessagesEndWithTheUser(t *testing.T) {
	t.Parallel()
	got := Messages([]*drydock.Event{ev(drydock.EventModel, ModelTurn{Step: 1, Text: "I am done."})}, Options{Task: "t"})
	if n := len(got); n != 3 || got[2].Role != llm.RoleUser || got[2].Text != Continue {
		t.Errorf("messages %+v", got)
	}
	if got := Messages(nil, Options{Task: "t"}); len(got) != 1 || got[0].Text != "t" {
		t.Errorf("no events: %+v", got)
	}
}

func TestMessagesKeepOnlyRecentImages(t *testing.T) {
	t.Parallel()
	var events []*drydock.Event
	for i, id := range []string{"s1", "s2", "s3"} {
		events = append(events,
			ev(drydock.EventModel, ModelTurn{Step: i + 1, ToolCalls: []llm.ToolCall{{ID: id, Name: "computer", Input: json.RawMessage(`{"action":"screenshot"}`)}}}),
			ev(drydock.EventObservation, Observation{ID: id, Name: "computer", Output: "shot", Images: []ImageRef{{Path: id + ".png", MediaType: "image/png"}}}))
	}
	store := map[string]llm.Image{
		"s1.png": {MediaType: "image/png", Data: []byte("1")},
		"s2.png": {MediaType: "image/png", Data: []byte("2")},
		// s3's file is gone (e.g. not found after a restart)
	}
	got := Messages(events, Options{Task: "t", KeepImages: 2, Image: func(r ImageRef) (llm.Image, bool) { img, ok := store[r.Path]; return img, ok }})
	r1, r2, r3 := got[2].ToolResults[0], got[4].ToolResults[0], got[6].ToolResults[0]
	if len(r1.Images) != 0 || !strings.Contains(r1.Output, "[image not shown: s1.png]") {
		t.Errorf("oldest screenshot %+v; want it named, not shown", r1)
	}
	if len(r2.Images) != 1 || string(r2.Images[0].Data) != "2" {
		t.Errorf("second screenshot %+v; want it shown", r2)
	}
	if len(r3.Images) != 0 || !strings.Contains(r3.Output, "[image not shown: s3.png]") {
		t.Errorf("missing screenshot %+v", r3)
	}
	// A model that takes no images gets names only.
	for _, m := range Messages(events, Options{Task: "t", Image: func(ImageRef) (llm.Image, bool) { return llm.Image{}, true }}) {
		for _, r := range m.ToolResults {
			if len(r.Images) != 0 {
				t.Errorf("image shown with KeepImages 0")
			}
		}
	}
}
