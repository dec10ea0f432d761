package transcript

import (
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
)

// FuzzMessages: the event log is read back on every step and after every
// restart, and any event's data may be damaged or hostile (a tool's output,
// a model's tool-call ids). Whatever four events hold, between well-formed
// ones, the conversation keeps the shape both model APIs demand: it starts
// and ends with the user, roles alternate, and every tool call is answered
// by exactly one result with its id, in call order.
func FuzzMessages(f *testing.F) {
	f.Add("model", []byte(`{"step":2,"tool_calls":[{"id":"x","name":"bash","input":{}}]}`), "observation", []byte(`{"id":"x","output":"o"}`),
		"log", []byte(`{"notice":true,"message":"m"}`), "condensation", []byte(`{"kind":"summary","summary":"s","through_step":1}`))
	f.Add("model", []byte(`{"tool_calls":[{"id":"a"},{"id":"a"}]}`), "observation", []byte(`{"id":"a"}`),
		"observation", []byte(`{"id":"a"}`), "observation", []byte(`{"id":"b"}`))
	f.Add("log", []byte(`{"kind":"context_mask","through_step":99}`), "log", []byte(`{"kind":"context_cut","step":1}`),
		"model", []byte(`{"step":-1,"text":" "}`), "model", []byte(`null`))
	f.Add("observation", []byte(`{"id":"b","images":[{"path":"../../x.png"}]}`), "model", []byte(`{"tool_calls":[{"id":""}]}`),
		"observation", []byte(`{"id":""}`), "status", []byte(`{}`))
	f.Add("model", []byte(`[`), "observation", []byte(`{"id":1}`), "condensation", []byte(`{"through_step":-5}`), "log", []byte(`"x"`))
	f.Fuzz(func(t *testing.T, t1 string, d1 []byte, t2 string, d2 []byte, t3 string, d3 []byte, t4 string, d4 []byte) {
		events := []*drydock.Event{
			ev(drydock.EventModel, ModelTurn{Step: 1, Text: "Looking.", ToolCalls: calls("a", "b")}),
			ev(drydock.EventObservation, Observation{ID: "a", Name: "bash", Output: "A"}),
		}
		for _, e := range []struct {
			typ  string
			data []byte
		}{{t1, d1}, {t2, d2}, {t3, d3}, {t4, d4}} {
			events = append(events, &drydock.Event{JobID: "j", Type: drydock.EventType(e.typ), Data: e.data})
		}
		events = append(events, ev(drydock.EventModel, ModelTurn{Step: 9, ToolCalls: calls("z")}))
		for _, keep := range []int{0, 3} {
			msgs := Messages(events, Options{Task: "Do it.", KeepImages: keep})
			if len(msgs) == 0 || msgs[0].Role != llm.RoleUser || msgs[len(msgs)-1].Role != llm.RoleUser {
				t.Fatalf("conversation does not start and end with the user: %+v", msgs)
			}
			for i, m := range msgs {
				want := llm.RoleUser
				if i%2 == 1 {
					want = llm.RoleAssistant
				}
				if m.Role != want {
					t.Fatalf("message %d is %s, want %s", i, m.Role, want)
				}
				if m.Role != llm.RoleAssistant {
					continue
				}
				res := msgs[i+1].ToolResults
				if len(res) != len(m.ToolCalls) {
					t.Fatalf("message %d: %d calls, %d results", i, len(m.ToolCalls), len(res))
				}
				for k, c := range m.ToolCalls {
					if res[k].CallID != c.ID {
						t.Fatalf("message %d: result %d answers %q, not %q", i, k, res[k].CallID, c.ID)
					}
				}
			}
		}
	})
}
