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

// A reasoning model on the Responses API keeps its chain of thought: the
// encrypted reasoning of every step goes back in later prompts (the
// scripted server refuses a prompt that drops the previous one), also
// for steps whose observations the context manager has masked, and after
// a restart from the event log, against a new server.
func TestReasoningSurvivesMaskingAndRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	bash := func(s string) llmtest.Turn {
		return llmtest.Turn{Reasoning: "I should run " + s, ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "echo " + s + " >> log.txt"})}}
	}
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{Func: func(r *llmtest.Request) llmtest.Turn {
		switch r.N {
		case 1:
			return bash("one")
		case 2:
			return bash("two")
		case 3:
			return bash("three")
		}
		cancel() // the orchestrator goes away while the model thinks
		return llmtest.Turn{Text: "never seen", Delay: time.Minute}
	}}, agent.Config{Model: "gpt-5-mini", OpenAIAPI: "responses", ReasoningEffort: "low", KeepObservations: 1})
	if _, err := b.run(ctx, job("Write the log."), nil); ctx.Err() == nil || err == nil {
		t.Fatalf("first run: %v", err)
	}
	reqs := b.srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests; want 4", len(reqs))
	}
	want := []string{"rs_llmtest_1", "rs_llmtest_2", "rs_llmtest_3"}
	if got := reqs[3].Reasoning; !cmp.Equal(got, want) {
		t.Errorf("fourth prompt sent back reasoning %v; want %v", got, want)
	}
	if e := reqs[3].ReasoningEffort; e != "low" {
		t.Errorf("effort %q; want low", e)
	}
	history := b.rec.Events()
	var turn transcript.ModelTurn
	if err := json.Unmarshal(b.rec.ofType(drydock.EventModel)[0].Data, &turn); err != nil || turn.Reasoning == nil || turn.Reasoning.Provider != "openai" {
		t.Fatalf("the first model event holds no openai state: %+v %v", turn, err)
	}
	var usage struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	}
	if err := json.Unmarshal(b.rec.ofType(drydock.EventUsage)[0].Data, &usage); err != nil || usage.ReasoningTokens <= 0 {
		t.Errorf("the usage event does not count reasoning tokens: %+v %v", usage, err)
	}

	// A new orchestrator, a new model server: the same sandbox and log.
	srv2 := llmtest.NewServer(t, llmtest.Options{APIKey: llmtest.TestKey, Turns: []llmtest.Turn{finish("three lines")}})
	a2, err := agent.New(agent.Config{Provider: agent.ProviderOpenAI, Model: "gpt-5-mini", APIKey: llmtest.TestKey, BaseURL: srv2.OpenAIBaseURL(), OpenAIAPI: "responses"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.agent, b.srv = a2, srv2
	out, err := b.run(t.Context(), job("Write the log."), history)
	if err != nil || out.Summary != "three lines" {
		t.Fatalf("second run: %+v %v", out, err)
	}
	if got := srv2.Requests()[0].Reasoning; !cmp.Equal(got, want) {
		t.Errorf("resumed prompt sent back reasoning %v; want %v", got, want)
	}
}

// A long run of a reasoning model on the Responses API under a small
// context budget: the context manager masks and condenses as usual, every
// prompt carries the reasoning of the turns it shows (the scripted server
// refuses one that drops the previous turn's) and stays within the budget.
func TestReasoningRunStaysWithinTheBudget(t *testing.T) {
	t.Parallel()
	const budget, steps = 6000, 60
	m := &longRun{steps: steps, needleStep: 10, recallStep: 50, byStep: map[int]*llmtest.Request{}}
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{Func: func(r *llmtest.Request) llmtest.Turn {
		turn := m.answer(r)
		if !isSummary(r) {
			turn.Reasoning = fmt.Sprintf("Step %d needs the next command; nothing has failed so far.", m.n)
		}
		return turn
	}}, agent.Config{Model: "gpt-5-mini", OpenAIAPI: "responses", MaxSteps: steps + 10})
	j := job("Run the scripted steps.")
	j.ContextBudget = budget
	out, err := b.run(t.Context(), j, nil)
	if err != nil || out.Summary != "ran all the steps" {
		t.Fatalf("run: %+v %v", out, err)
	}
	if n := len(b.rec.ofType(drydock.EventCondensation)); n == 0 {
		t.Errorf("no condensation in %d steps under a %d-token budget", steps, budget)
	}
	for _, r := range b.srv.Requests() {
		if in := promptTokens(r); in > budget {
			t.Errorf("request %d: %d input tokens over the %d budget", r.N, in, budget)
		}
	}
	last := m.byStep[steps]
	if len(last.Reasoning) == 0 || last.Reasoning[len(last.Reasoning)-1] != fmt.Sprintf("rs_llmtest_%d", m.byStep[steps-1].N) {
		t.Errorf("the last step's prompt sent back reasoning %v; want it to end with the previous step's", last.Reasoning)
	}
}

func TestOpenAISettingsAreChecked(t *testing.T) {
	t.Parallel()
	for _, cfg := range []agent.Config{{OpenAIAPI: "soap"}, {ReasoningEffort: "gpt-5=hard"}} {
		cfg.Provider = agent.ProviderOpenAI
		cfg.APIKey = llmtest.TestKey
		if _, err := agent.New(cfg, nil); drydock.ErrorCode(err) != drydock.EINVALID {
			t.Errorf("New(%+v) = %v; want %s", cfg, err, drydock.EINVALID)
		}
	}
}
