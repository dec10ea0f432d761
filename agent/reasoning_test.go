package agent_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock/agent"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
	"github.com/google/go-cmp/cmp"
)

// OpenAI's record of a turn is held like Anthropic's thinking when the
// log's masking would alter it: logged without it, sent back whole from
// memory. (Logged masked, its item would fail its checksum and be left out
// of the next prompt, which the API, and the scripted server, refuse for
// the turn the prompt's tool results answer.) The secret here is a value of
// the server's environment that the scripted server's encrypted content
// happens to contain; real encrypted content could as well.
func TestReasoningTheLogWouldAlterIsHeldWhole(t *testing.T) {
	t.Parallel()
	secret := base64.StdEncoding.EncodeToString([]byte("llmtest reasoning "))
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{Turns: []llmtest.Turn{
		{Reasoning: "Start the log.", ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "echo 1 >> log.txt"})}},
		finish("done"),
	}}, agent.Config{Model: "gpt-5-mini", OpenAIAPI: "responses", Environ: []string{"DRYDOCK_TEST_TOKEN=" + secret}})
	if out, err := b.run(t.Context(), job("Write the log."), nil); err != nil || out.Summary != "done" {
		t.Fatalf("run: %+v %v (%v)", out, err, b.srv.Problems())
	}
	for _, e := range b.rec.Events() {
		if strings.Contains(string(e.Data), secret) {
			t.Errorf("%s event holds the secret: %s", e.Type, e.Data)
		}
	}
	if turns := modelTurns(t, b.rec); turns[0].Reasoning != nil || !turns[0].ReasoningOmitted {
		t.Errorf("first model event %+v; want its reasoning left out and marked", turns[0])
	}
	if got, want := b.srv.Requests()[1].Reasoning, []string{"rs_llmtest_1"}; !cmp.Equal(got, want) {
		t.Errorf("second request sent back reasoning %v; want %v, whole", got, want)
	}
}

// After a restart the held record is gone: the resumed prompt goes without
// that turn's reasoning, which the API accepts, and the job goes on.
func TestReasoningLeftOutOfTheLogIsLostOnResumeOnly(t *testing.T) {
	t.Parallel()
	secret := base64.StdEncoding.EncodeToString([]byte("llmtest reasoning "))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cfg := agent.Config{Model: "gpt-5-mini", OpenAIAPI: "responses", Environ: []string{"DRYDOCK_TEST_TOKEN=" + secret}}
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{Func: func(r *llmtest.Request) llmtest.Turn {
		if r.N == 1 {
			return llmtest.Turn{Reasoning: "Start the log.", ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "echo 1 >> log.txt"})}}
		}
		cancel()
		return llmtest.Turn{Text: "never seen", Delay: time.Minute}
	}}, cfg)
	if _, err := b.run(ctx, job("Write the log."), nil); ctx.Err() == nil || err == nil {
		t.Fatalf("first run: %v", err)
	}
	history := b.rec.Events()
	srv2 := llmtest.NewServer(t, llmtest.Options{APIKey: llmtest.TestKey, Turns: []llmtest.Turn{finish("one line")}})
	cfg.Provider, cfg.APIKey, cfg.BaseURL = agent.ProviderOpenAI, llmtest.TestKey, srv2.OpenAIBaseURL()
	a2, err := agent.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.agent, b.srv = a2, srv2
	if out, err := b.run(t.Context(), job("Write the log."), history); err != nil || out.Summary != "one line" {
		t.Fatalf("second run: %+v %v (%v)", out, err, srv2.Problems())
	}
	if got := srv2.Requests()[0].Reasoning; len(got) != 0 {
		t.Errorf("resumed prompt sent back reasoning %v; want none (it was never logged)", got)
	}
}
