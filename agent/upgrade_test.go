package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
	"github.com/google/go-cmp/cmp"
)

// Model events stored before the provider's record of a turn was one field
// (llm.Reasoning) hold Anthropic's blocks in "thinking" (or
// "thinking_omitted") and OpenAI's record in "state". They still decode.
func TestModelEventsOfTheFormerFormatDecode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, data string
		want       *llm.Reasoning
		omitted    bool
	}{
		{name: "thinking",
			data: `{"step":3,"model":"claude-sonnet-4-5","thinking":[{"thinking":"View it first.","signature":"sig-3"},{"redacted":"ZW5jcnlwdGVk"}],"text":"Viewing.","tool_calls":[{"id":"toolu_1","name":"bash","input":{"command":"ls"}}],"stop_reason":"tool_use"}`,
			want: llm.ThinkingReasoning([]llm.Thinking{{Text: "View it first.", Signature: "sig-3"}, {Redacted: "ZW5jcnlwdGVk"}})},
		{name: "thinking omitted",
			data:    `{"step":4,"thinking_omitted":true,"text":"Again.","tool_calls":[{"id":"toolu_2","name":"bash","input":{}}],"stop_reason":"tool_use"}`,
			omitted: true},
		{name: "state",
			data: `{"step":2,"model":"gpt-5-mini","tool_calls":[{"id":"call_1","name":"bash","input":{"command":"ls"}}],"stop_reason":"tool_use","state":{"provider":"openai","data":{"model":"gpt-5-mini","items":[{"type":"reasoning","id":"rs_1","encrypted_content":"ZW5j","sum":"00"},{"type":"function_call","id":"fc_1"}]}}}`,
			want: &llm.Reasoning{Provider: "openai", Data: json.RawMessage(`{"model":"gpt-5-mini","items":[{"type":"reasoning","id":"rs_1","encrypted_content":"ZW5j","sum":"00"},{"type":"function_call","id":"fc_1"}]}`)}},
		{name: "neither", data: `{"step":1,"text":"Done.","stop_reason":"end_turn"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var turn transcript.ModelTurn
			if err := json.Unmarshal([]byte(tc.data), &turn); err != nil {
				t.Fatal(err)
			}
			if !turn.Reasoning.Equal(tc.want) || turn.ReasoningOmitted != tc.omitted {
				t.Errorf("decoded reasoning %+v (omitted %v); want %+v (omitted %v)", turn.Reasoning, turn.ReasoningOmitted, tc.want, tc.omitted)
			}
			if turn.Step == 0 || turn.StopReason == "" {
				t.Errorf("decoded %+v; the other fields were lost", turn)
			}
			// Written again, the turn takes the current form.
			out, err := json.Marshal(turn)
			if err != nil {
				t.Fatal(err)
			}
			var top map[string]json.RawMessage
			if err := json.Unmarshal(out, &top); err != nil {
				t.Fatal(err)
			}
			for _, old := range []string{"thinking", "thinking_omitted", "state"} {
				if _, ok := top[old]; ok {
					t.Errorf("re-encoded as %s; want the reasoning fields only", out)
				}
			}
		})
	}
}

// formerFormat rewrites the model events of a log as the orchestrator
// wrote them before the upgrade: the turn's reasoning as Anthropic's
// "thinking" blocks or as OpenAI's "state".
func formerFormat(t *testing.T, events []*drydock.Event) []*drydock.Event {
	t.Helper()
	out := make([]*drydock.Event, len(events))
	rewritten := 0
	for i, e := range events {
		out[i] = e
		if e.Type != drydock.EventModel {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(e.Data, &m); err != nil {
			t.Fatal(err)
		}
		raw, ok := m["reasoning"]
		if !ok {
			continue
		}
		var r llm.Reasoning
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		delete(m, "reasoning")
		if r.Provider == llm.ProviderAnthropic {
			m["thinking"] = r.Data
		} else {
			m["state"] = raw
		}
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		c := *e
		c.Data = data
		out[i] = &c
		rewritten++
	}
	if rewritten == 0 {
		t.Fatal("no model event held reasoning: the test must exercise the rewrite")
	}
	return out
}

// A job whose log was written before the upgrade resumes on the new
// orchestrator with its last turn's thinking sent back whole, so the
// tool-use loop goes on thinking (the scripted server checks the
// signature).
func TestThinkingOfALogWrittenBeforeTheUpgradeGoesBack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	b := setup(t, agent.ProviderAnthropic, llmtest.Options{Func: func(r *llmtest.Request) llmtest.Turn {
		if r.N <= 2 {
			return thinkingStep(r.N, fmt.Sprintf("Step %d of the plan.", r.N))
		}
		cancel()
		return llmtest.Turn{Text: "never seen", Delay: time.Minute}
	}}, agent.Config{})
	if _, err := b.run(ctx, job("Write the log."), nil); ctx.Err() == nil || err == nil {
		t.Fatalf("first run: %v", err)
	}
	history := formerFormat(t, b.rec.Events())
	srv2 := llmtest.NewServer(t, llmtest.Options{APIKey: llmtest.TestKey, Turns: []llmtest.Turn{finish("two lines")}})
	a2, err := agent.New(agent.Config{Provider: agent.ProviderAnthropic, Model: b.model, APIKey: llmtest.TestKey, BaseURL: srv2.AnthropicBaseURL()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.agent, b.srv = a2, srv2
	if out, err := b.run(t.Context(), job("Write the log."), history); err != nil || out.Summary != "two lines" {
		t.Fatalf("second run: %+v %v (%v)", out, err, srv2.Problems())
	}
	first := srv2.Requests()[0]
	if first.Thinking == 0 {
		t.Errorf("resumed request thinks not; the last turn's thinking was lost")
	}
	if got, want := lastAssistant(t, first).Reasoning.Thinking(), llmtest.SignThinking(llm.Thinking{Text: "Step 2 of the plan."}); len(got) != 1 || got[0] != want {
		t.Errorf("resumed last turn's thinking %+v; want %+v", got, want)
	}
}

// The same for OpenAI's encrypted reasoning, stored as "state": every
// turn's reasoning goes back after the upgrade.
func TestStateOfALogWrittenBeforeTheUpgradeGoesBack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	step := func(s string) llmtest.Turn {
		return llmtest.Turn{Reasoning: "I should run " + s, ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "echo " + s + " >> log.txt"})}}
	}
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{Func: func(r *llmtest.Request) llmtest.Turn {
		if r.N <= 2 {
			return step([]string{"one", "two"}[r.N-1])
		}
		cancel()
		return llmtest.Turn{Text: "never seen", Delay: time.Minute}
	}}, agent.Config{Model: "gpt-5-mini", OpenAIAPI: "responses"})
	if _, err := b.run(ctx, job("Write the log."), nil); ctx.Err() == nil || err == nil {
		t.Fatalf("first run: %v", err)
	}
	history := formerFormat(t, b.rec.Events())
	srv2 := llmtest.NewServer(t, llmtest.Options{APIKey: llmtest.TestKey, Turns: []llmtest.Turn{finish("two lines")}})
	a2, err := agent.New(agent.Config{Provider: agent.ProviderOpenAI, Model: "gpt-5-mini", APIKey: llmtest.TestKey, BaseURL: srv2.OpenAIBaseURL(), OpenAIAPI: "responses"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.agent, b.srv = a2, srv2
	if out, err := b.run(t.Context(), job("Write the log."), history); err != nil || out.Summary != "two lines" {
		t.Fatalf("second run: %+v %v (%v)", out, err, srv2.Problems())
	}
	if got, want := srv2.Requests()[0].Reasoning, []string{"rs_llmtest_1", "rs_llmtest_2"}; !cmp.Equal(got, want) {
		t.Errorf("resumed prompt sent back reasoning %v; want %v", got, want)
	}
}
