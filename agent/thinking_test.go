package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// thinkingStep is a turn that thinks, then appends a line with bash.
func thinkingStep(n int, thought string) llmtest.Turn {
	return llmtest.Turn{
		Thinking:  []llm.Thinking{{Text: thought}},
		ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": fmt.Sprintf("echo %d >> log.txt", n)})},
	}
}

// lastAssistant is the assistant message a request's tool results answer.
func lastAssistant(t *testing.T, r *llmtest.Request) llm.Message {
	t.Helper()
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == llm.RoleAssistant {
			return r.Messages[i]
		}
	}
	t.Fatalf("request %d has no assistant message", r.N)
	return llm.Message{}
}

func modelTurns(t *testing.T, rec *recorder) []transcript.ModelTurn {
	t.Helper()
	var out []transcript.ModelTurn
	for _, e := range rec.ofType(drydock.EventModel) {
		var m transcript.ModelTurn
		if err := json.Unmarshal(e.Data, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// With thinking on, each turn's thinking goes back unchanged with it (the
// scripted server refuses the request otherwise), and the log keeps it.
func TestThinkingGoesBackEachStep(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderAnthropic, llmtest.Options{Turns: []llmtest.Turn{
		thinkingStep(1, "First, start the log."), thinkingStep(2, "Then add a line."),
		{Thinking: []llm.Thinking{{Redacted: "flagged"}}, ToolCalls: []llm.ToolCall{call("finish", map[string]string{"summary": "two lines"})}},
	}}, agent.Config{})
	if _, err := b.run(t.Context(), job("Write the log."), nil); err != nil {
		t.Fatal(err)
	}
	reqs := b.srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests; want 3", len(reqs))
	}
	for i, r := range reqs {
		if r.Thinking == 0 {
			t.Errorf("request %d: thinking off; want the model's default budget", r.N)
		}
		if i > 0 {
			want := llmtest.SignThinking(llm.Thinking{Text: []string{"First, start the log.", "Then add a line."}[i-1]})
			if got := lastAssistant(t, r).Reasoning.Thinking(); len(got) != 1 || got[0] != want {
				t.Errorf("request %d: last turn's thinking %+v; want %+v", r.N, got, want)
			}
		}
	}
	turns := modelTurns(t, b.rec)
	if len(turns) != 3 || len(turns[0].Reasoning.Thinking()) != 1 || turns[0].Reasoning.Thinking()[0].Signature == "" || len(turns[2].Reasoning.Thinking()) != 1 || turns[2].Reasoning.Thinking()[0].Redacted == "" {
		t.Errorf("model events %+v; want each turn's thinking with its signature or data", turns)
	}
}

// A restarted run rebuilds the conversation from the log, thinking
// included, so the loop goes on thinking.
func TestThinkingSurvivesResume(t *testing.T) {
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
	history := b.rec.Events()
	srv2 := llmtest.NewServer(t, llmtest.Options{APIKey: llmtest.TestKey, Turns: []llmtest.Turn{finish("two lines")}})
	a2, err := agent.New(agent.Config{Provider: agent.ProviderAnthropic, Model: b.model, APIKey: llmtest.TestKey, BaseURL: srv2.AnthropicBaseURL()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.agent, b.srv = a2, srv2
	if out, err := b.run(t.Context(), job("Write the log."), history); err != nil || out.Summary != "two lines" {
		t.Fatalf("second run: %+v %v", out, err)
	}
	first := srv2.Requests()[0]
	if first.Thinking == 0 {
		t.Errorf("resumed request thinks not; the last turn's thinking was lost")
	}
	if got, want := lastAssistant(t, first).Reasoning.Thinking(), llmtest.SignThinking(llm.Thinking{Text: "Step 2 of the plan."}); len(got) != 1 || got[0] != want {
		t.Errorf("resumed last turn's thinking %+v; want %+v", got, want)
	}
}

// Thinking that holds a secret stays out of the log (masking would break
// its signature), yet goes back whole with the next request.
func TestThinkingWithASecretStaysOutOfTheLog(t *testing.T) {
	t.Parallel()
	secret := "ghp_" + strings.Repeat("a1B2", 9)
	b := setup(t, agent.ProviderAnthropic, llmtest.Options{Turns: []llmtest.Turn{
		thinkingStep(1, "The token is "+secret+"; do not print it."),
		finish("done"),
	}}, agent.Config{})
	if _, err := b.run(t.Context(), job("Write the log."), nil); err != nil {
		t.Fatal(err)
	}
	for _, e := range b.rec.Events() {
		if strings.Contains(string(e.Data), secret) {
			t.Errorf("%s event holds the secret: %s", e.Type, e.Data)
		}
	}
	if turns := modelTurns(t, b.rec); turns[0].Reasoning != nil || !turns[0].ReasoningOmitted {
		t.Errorf("first model event %+v; want its thinking left out and marked", turns[0])
	}
	r := b.srv.Requests()[1]
	if got := lastAssistant(t, r).Reasoning.Thinking(); len(got) != 1 || !strings.Contains(got[0].Text, secret) || r.Thinking == 0 {
		t.Errorf("second request: thinking %d, last turn's %+v; want the held thinking sent back whole", r.Thinking, got)
	}
}

// ThinkingBudget configures the provider: a budget, or off.
func TestThinkingBudgetConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ budget, want int }{{2048, 2048}, {-1, 0}} {
		b := setup(t, agent.ProviderAnthropic, llmtest.Options{Turns: []llmtest.Turn{finish("done")}}, agent.Config{ThinkingBudget: c.budget})
		if _, err := b.run(t.Context(), job("Nothing."), nil); err != nil {
			t.Fatal(err)
		}
		if got := b.srv.Requests()[0].Thinking; got != c.want {
			t.Errorf("ThinkingBudget %d: request thinks with %d; want %d", c.budget, got, c.want)
		}
	}
}

func TestThinkingBudgetUnderTheMinimumIsRefused(t *testing.T) {
	t.Parallel()
	_, err := agent.New(agent.Config{Provider: agent.ProviderAnthropic, APIKey: llmtest.TestKey, ThinkingBudget: 500}, nil)
	if drydock.ErrorCode(err) != drydock.EINVALID || !strings.Contains(drydock.ErrorMessage(err), "at least 1024") {
		t.Errorf("error %v; want EINVALID naming the minimum", err)
	}
}

// A turn whose event would be cut to fit the log (a huge file written in
// one call), its long thinking with it, keeps its thinking out of the log,
// whole in memory, rather than cut and refused.
func TestThinkingOfAnOversizedTurnIsHeldWhole(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", drydock.MaxEventDataBytes)
	// Long thinking (a large budget): the cut would reach it.
	thought := "Write it in one go. " + strings.Repeat("Because ", 10_000)
	b := setup(t, agent.ProviderAnthropic, llmtest.Options{Turns: []llmtest.Turn{
		{Thinking: []llm.Thinking{{Text: thought}}, ToolCalls: []llm.ToolCall{call("str_replace_based_edit_tool", map[string]string{"command": "create", "path": "big.txt", "file_text": big})}},
		finish("done"),
	}}, agent.Config{})
	if _, err := b.run(t.Context(), job("Write a big file."), nil); err != nil {
		t.Fatal(err)
	}
	if turns := modelTurns(t, b.rec); !turns[0].ReasoningOmitted {
		t.Errorf("first model event not marked as omitting its thinking")
	}
	want := llmtest.SignThinking(llm.Thinking{Text: thought})
	if got := lastAssistant(t, b.srv.Requests()[1]).Reasoning.Thinking(); len(got) != 1 || got[0] != want {
		t.Errorf("second request's last thinking %+v; want %+v", got, want)
	}
}

// A Claude job gets the built-in tools, and the calls they produce work:
// the 20250728 editor's insert_text, bash's restart.
func TestClaudeUsesBuiltInTools(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderAnthropic, llmtest.Options{Turns: []llmtest.Turn{
		{ToolCalls: []llm.ToolCall{llmtest.Call("str_replace_based_edit_tool", `{"command":"create","path":"notes.txt","file_text":"one\nthree\n"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("str_replace_based_edit_tool", `{"command":"insert","path":"notes.txt","insert_line":1,"insert_text":"two\n"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"restart":true}`)}},
		finish("notes.txt has three lines"),
	}}, agent.Config{})
	if _, err := b.run(t.Context(), job("Write notes."), nil); err != nil {
		t.Fatal(err)
	}
	if got := b.file(t, "notes.txt"); got != "one\ntwo\nthree\n" {
		t.Errorf("notes.txt = %q", got)
	}
	types := map[string]string{}
	for _, tl := range b.srv.Requests()[0].Tools {
		if tl.Native != nil {
			types[tl.Name] = tl.Native.Type
		}
	}
	if types["bash"] != "bash_20250124" || types["str_replace_based_edit_tool"] != "text_editor_20250728" || len(types) != 2 {
		t.Errorf("built-in tools offered %v; want bash and the 20250728 editor", types)
	}
	contains(t, "restart result", b.srv.Requests()[3].LastUser().ToolResults[0].Output, "restarted")
}
