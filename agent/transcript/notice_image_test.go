package transcript

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
)

// A notice's screenshot (the desktop after a person used it) is shown with
// the notice, after the turn's results, and counts among the latest images
// as a tool's screenshot does.
func TestNoticeImagesAreShownLikeScreenshots(t *testing.T) {
	t.Parallel()
	shot := func(id string) []*drydock.Event {
		return []*drydock.Event{
			ev(drydock.EventModel, ModelTurn{Step: 1, ToolCalls: []llm.ToolCall{{ID: id, Name: "computer", Input: json.RawMessage(`{"action":"screenshot"}`)}}}),
			ev(drydock.EventObservation, Observation{ID: id, Name: "computer", Output: "shot", Images: []ImageRef{{Path: id + ".png", MediaType: "image/png"}}}),
		}
	}
	events := append(shot("s1"), ev(drydock.EventLog, Notice{Level: "info", Message: "A person used the desktop.", Notice: true,
		Images: []ImageRef{{Path: "after.png", MediaType: "image/png"}}}))
	store := map[string]llm.Image{
		"s1.png":    {MediaType: "image/png", Data: []byte("1")},
		"after.png": {MediaType: "image/png", Data: []byte("after")},
	}
	image := func(r ImageRef) (llm.Image, bool) { img, ok := store[r.Path]; return img, ok }

	got := Messages(events, Options{Task: "t", KeepImages: 1, Image: image})
	m := got[2]
	if len(m.Images) != 1 || string(m.Images[0].Data) != "after" || !strings.Contains(m.Text, "A person used the desktop.") {
		t.Fatalf("user message %+v; want the notice with its screenshot", m)
	}
	// Only one image is kept: the notice's, the newest; the tool's is named.
	if r := m.ToolResults[0]; len(r.Images) != 0 || !strings.Contains(r.Output, "[image not shown: s1.png]") {
		t.Errorf("older screenshot %+v; want it named", r)
	}
	// Once newer screenshots come, the notice's is named instead.
	events = append(events, shot("s2")...)
	got = Messages(events, Options{Task: "t", KeepImages: 1, Image: image})
	if m := got[2]; len(m.Images) != 0 || !strings.Contains(m.Text, "[image not shown: after.png]") {
		t.Errorf("old notice %+v; want its image named", m)
	}
}
