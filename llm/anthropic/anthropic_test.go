package anthropic_test

import (
	"strings"
	"testing"

	"github.com/drydockhq/drydock"

	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/anthropic"
	"github.com/drydockhq/drydock/llm/llmtest"
)

func TestConformance(t *testing.T) {
	llmtest.Run(t, func(t *testing.T, srv *llmtest.Server, cfg llmtest.Config) llm.Provider {
		p, err := anthropic.New(anthropic.Config{
			APIKey: cfg.APIKey, BaseURL: srv.AnthropicBaseURL(),
			MaxRetries: cfg.MaxRetries, RequestTimeout: cfg.RequestTimeout,
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	})
}

func TestPromptCaching(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.Options{Turns: []llmtest.Turn{{Text: "ok"}, {Text: "ok"}, {Text: "ok"}}})
	// Thinking off: its budget would come on top of max_tokens.
	p, err := anthropic.New(anthropic.Config{APIKey: llmtest.TestKey, BaseURL: srv.AnthropicBaseURL(), ThinkingBudget: -1})
	if err != nil {
		t.Fatal(err)
	}
	short := []llm.Message{{Role: llm.RoleUser, Text: "first"}}
	long := []llm.Message{
		{Role: llm.RoleUser, Text: "first"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "toolu_1", Name: "bash", Input: []byte(`{"command":"ls"}`)}}},
		{Role: llm.RoleUser, ToolResults: []llm.ToolResult{{CallID: "toolu_1", Output: "a.txt"}}},
		{Role: llm.RoleAssistant, Text: "Thinking."},
		{Role: llm.RoleUser, Text: "go on"},
	}
	tools := []llm.Tool{{Name: "bash", InputSchema: []byte(`{"type":"object","properties":{"command":{"type":"string"}}}`)}}
	for _, msgs := range [][]llm.Message{short, long} {
		if _, err := p.Complete(t.Context(), &llm.Request{Model: "claude-sonnet-4-5", System: "sys", Tools: tools, Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	// The system prompt, plus the last one or two user turns.
	if reqs[0].CacheBreakpoints != 2 || reqs[1].CacheBreakpoints != 3 {
		t.Errorf("cache breakpoints %d and %d; want 2 and 3", reqs[0].CacheBreakpoints, reqs[1].CacheBreakpoints)
	}
	// NoToolCalls sets no tool_choice: changing it would invalidate the
	// cached messages.
	if _, err := p.Complete(t.Context(), &llm.Request{Model: "claude-sonnet-4-5", System: "sys", Tools: tools, Messages: long, NoToolCalls: true}); err != nil {
		t.Fatal(err)
	}
	if r := srv.Requests()[2]; len(r.Tools) != 1 || strings.Contains(string(r.Body), "tool_choice") {
		t.Errorf("NoToolCalls: %d tools, body %s; want the tools and no tool_choice", len(r.Tools), r.Body)
	}
	if reqs[0].MaxTokens != anthropic.DefaultMaxTokens {
		t.Errorf("max_tokens %d; want the default %d", reqs[0].MaxTokens, anthropic.DefaultMaxTokens)
	}
}

func TestNoCredentials(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
	_, err := anthropic.New(anthropic.Config{})
	if drydock.ErrorCode(err) != drydock.EINVALID || !strings.Contains(drydock.ErrorMessage(err), "ANTHROPIC_API_KEY") {
		t.Errorf("error %v; want EINVALID naming ANTHROPIC_API_KEY", err)
	}
}

// The package takes nothing from the environment: a key there is not
// used, and a bearer token given in Config is.
func TestCredentialsComeFromConfig(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env-0123456789")
	if _, err := anthropic.New(anthropic.Config{}); drydock.ErrorCode(err) != drydock.EINVALID {
		t.Fatalf("New without credentials but a key in the environment: %v; want EINVALID", err)
	}
	srv := llmtest.NewServer(t, llmtest.Options{APIKey: "sk-ant-oat-bearer-0123456789", Turns: []llmtest.Turn{{Text: "hi"}}})
	p, err := anthropic.New(anthropic.Config{AuthToken: "sk-ant-oat-bearer-0123456789", BaseURL: srv.AnthropicBaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Complete(t.Context(), &llm.Request{Model: "claude-haiku-4-5", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}})
	if err != nil || res.Text != "hi" {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestNativeDialect(t *testing.T) {
	llmtest.RunAnthropicNative(t, func(t *testing.T, srv *llmtest.Server, budget int) llm.Provider {
		p, err := anthropic.New(anthropic.Config{APIKey: llmtest.TestKey, BaseURL: srv.AnthropicBaseURL(), MaxRetries: 1, ThinkingBudget: budget})
		if err != nil {
			t.Fatal(err)
		}
		return p
	})
}

// A summary request appends a user message to a conversation that ends
// with tool results; the API merges the two, so the turn those results
// answer decides whether thinking may be on.
func TestThinkingOffWhenMergedResultsAnswerATurnWithoutIt(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.Options{Turns: []llmtest.Turn{{Text: "summary"}, {Text: "summary"}}})
	p, err := anthropic.New(anthropic.Config{APIKey: llmtest.TestKey, BaseURL: srv.AnthropicBaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	msgs := func(thinking []llm.Thinking) []llm.Message {
		return []llm.Message{
			{Role: llm.RoleUser, Text: "task"},
			{Role: llm.RoleAssistant, Reasoning: llm.ThinkingReasoning(thinking), ToolCalls: []llm.ToolCall{{ID: "toolu_1", Name: "bash", Input: []byte(`{"command":"ls"}`)}}},
			{Role: llm.RoleUser, ToolResults: []llm.ToolResult{{CallID: "toolu_1", Output: "a.txt"}}},
			{Role: llm.RoleUser, Text: "Summarize the steps so far."},
		}
	}
	for _, th := range [][]llm.Thinking{nil, {llmtest.SignThinking(llm.Thinking{Text: "list it"})}} {
		if _, err := p.Complete(t.Context(), &llm.Request{Model: "claude-sonnet-4-5", Messages: msgs(th), NoToolCalls: true}); err != nil {
			t.Fatalf("thinking %v: %v", th, err)
		}
	}
	if r := srv.Requests(); r[0].Thinking != 0 || r[1].Thinking == 0 {
		t.Errorf("thinking budgets %d and %d; want off without the turn's thinking, on with it", r[0].Thinking, r[1].Thinking)
	}
}

// A large thinking budget stays within what the model takes: max_tokens is
// capped at its output limit, and without interleaving (no tools) the
// budget stays under max_tokens, as the API requires.
func TestThinkingBudgetWithinTheModelsOutput(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.Options{Turns: llmtest.Repeat(2, llmtest.Turn{Text: "ok"})})
	p, err := anthropic.New(anthropic.Config{APIKey: llmtest.TestKey, BaseURL: srv.AnthropicBaseURL(), ThinkingBudget: 30_000})
	if err != nil {
		t.Fatal(err)
	}
	tools := []llm.Tool{{Name: "echo", InputSchema: []byte(`{"type":"object","properties":{"text":{"type":"string"}}}`)}}
	for _, tl := range [][]llm.Tool{nil, tools} {
		if _, err := p.Complete(t.Context(), &llm.Request{Model: "claude-opus-4-1", Tools: tl, Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}); err != nil {
			t.Fatal(err)
		}
	}
	r := srv.Requests()
	if r[0].MaxTokens != 32_000 || r[0].Thinking >= r[0].MaxTokens || r[0].Thinking < 1024 {
		t.Errorf("without tools: max_tokens %d, budget %d; want 32000 and a budget under it", r[0].MaxTokens, r[0].Thinking)
	}
	if r[1].MaxTokens != 32_000 || r[1].Thinking != 30_000 {
		t.Errorf("with tools (interleaved): max_tokens %d, budget %d; want 32000 and 30000", r[1].MaxTokens, r[1].Thinking)
	}
}

// A request that goes without thinking sends no thinking blocks: the API
// needs none, and a model that cannot think may refuse them.
func TestNoThinkingBlocksWithoutThinking(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.Options{Turns: llmtest.Repeat(2, llmtest.Turn{Text: "ok"})})
	p, err := anthropic.New(anthropic.Config{APIKey: llmtest.TestKey, BaseURL: srv.AnthropicBaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	signed := []llm.Thinking{llmtest.SignThinking(llm.Thinking{Text: "earlier"})}
	msgs := []llm.Message{
		{Role: llm.RoleUser, Text: "task"},
		{Role: llm.RoleAssistant, Reasoning: llm.ThinkingReasoning(signed), ToolCalls: []llm.ToolCall{{ID: "toolu_1", Name: "bash", Input: []byte(`{}`)}}},
		{Role: llm.RoleUser, ToolResults: []llm.ToolResult{{CallID: "toolu_1", Output: "ok"}}},
		// This turn's thinking was lost: the request goes without.
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "toolu_2", Name: "bash", Input: []byte(`{}`)}}},
		{Role: llm.RoleUser, ToolResults: []llm.ToolResult{{CallID: "toolu_2", Output: "ok"}}},
	}
	for _, model := range []string{"claude-sonnet-4-5", "claude-3-5-haiku-latest"} {
		if _, err := p.Complete(t.Context(), &llm.Request{Model: model, Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range srv.Requests() {
		if r.Thinking != 0 || r.Messages[1].Reasoning != nil || strings.Contains(string(r.Body), `"thinking"`) {
			t.Errorf("%s: thinking %d, first turn's %+v; want no thinking at all", r.Model, r.Thinking, r.Messages[1].Reasoning)
		}
	}
}
