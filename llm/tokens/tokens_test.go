package tokens_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/tokens"
)

func TestForPicksTheEncoding(t *testing.T) {
	t.Parallel()
	tests := []struct{ provider, model, want string }{
		{"openai", "gpt-4.1", "o200k_base"},
		{"openai", "gpt-4o-mini-2024-07-18", "o200k_base"},
		{"openai", "gpt-5", "o200k_base"},
		{"openai", "o3", "o200k_base"},
		{"openai", "gpt-4", "cl100k_base"},
		{"openai", "gpt-4-0613", "cl100k_base"},
		{"openai", "gpt-3.5-turbo", "cl100k_base"},
		{"openai", "llama3.1:8b", "o200k_base"},
		{"openai", "anthropic/claude-sonnet-4-5", "estimate"}, // through a router
		{"anthropic", "claude-sonnet-4-5", "estimate"},
		{"anthropic", "some-future-model", "estimate"},
	}
	for _, tt := range tests {
		if got := tokens.For(tt.provider, tt.model).Name(); got != tt.want {
			t.Errorf("For(%q, %q) = %s, want %s", tt.provider, tt.model, got, tt.want)
		}
	}
}

// Counts that tiktoken gives for the same strings.
func TestBPECounts(t *testing.T) {
	t.Parallel()
	o200k := tokens.For("openai", "gpt-4o")
	cl100k := tokens.For("openai", "gpt-4")
	tests := []struct {
		c    tokens.Counter
		s    string
		want int
	}{
		{o200k, "", 0},
		{o200k, "hello world", 2},
		{cl100k, "hello world", 2},
		{cl100k, "tiktoken is great!", 6},
		{o200k, "tiktoken is great!", 6},
		{o200k, "invalid \xff utf-8", 5}, // counted as U+FFFD, not an error
	}
	for _, tt := range tests {
		if got := tt.c.Count(tt.s); got != tt.want {
			t.Errorf("%s.Count(%q) = %d, want %d", tt.c.Name(), tt.s, got, tt.want)
		}
	}
}

func TestEstimateIsConservative(t *testing.T) {
	t.Parallel()
	e := tokens.Estimate{}
	if got := e.Count("abcdefg"); got != 2 {
		t.Errorf("7 ASCII bytes: %d tokens, want 2", got)
	}
	if got := e.Count("日本語"); got != 3 {
		t.Errorf("3 CJK characters: %d tokens, want 3", got)
	}
	// English and code: the estimate is above what o200k counts, which is
	// close to Claude's tokenizer for such text.
	text := strings.Repeat("func (s *Server) handle(w http.ResponseWriter, r *http.Request) { // serve the request\n", 50) +
		strings.Repeat("The quick brown fox jumps over the lazy dog while the build runs its tests. ", 50)
	if est, bpe := e.Count(text), tokens.For("openai", "gpt-4o").Count(text); est < bpe {
		t.Errorf("estimate %d below o200k's %d", est, bpe)
	}
}

func TestRequestCountsEveryPart(t *testing.T) {
	t.Parallel()
	c := tokens.For("openai", "gpt-4.1")
	tool := llm.Tool{Name: "bash", Description: "Run a command.", InputSchema: json.RawMessage(`{"type":"object"}`)}
	call := llm.ToolCall{ID: "call_1", Name: "bash", Input: json.RawMessage(`{"command":"ls -la"}`)}
	img := llm.Image{MediaType: "image/png", Data: []byte("png")}
	req := &llm.Request{
		System: "You are helpful.",
		Tools:  []llm.Tool{tool},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Text: "List the files."},
			{Role: llm.RoleAssistant, Text: "Looking.", ToolCalls: []llm.ToolCall{call}},
			{Role: llm.RoleUser, ToolResults: []llm.ToolResult{{CallID: "call_1", Output: "a.txt\nb.txt", Images: []llm.Image{img}}}},
		},
	}
	parts := []string{"You are helpful.", "bash", "Run a command.", `{"type":"object"}`, "List the files.", "Looking.",
		"call_1", "bash", `{"command":"ls -la"}`, "call_1", "a.txt\nb.txt"}
	text := 0
	for _, p := range parts {
		text += c.Count(p)
	}
	got := tokens.Request(c, req)
	// Framing: request 3, system 4, tool 10, three messages 4 each, a call
	// 8, a result 8; and one image.
	if want := text + 3 + 4 + 10 + 12 + 8 + 8 + tokens.ImageTokens; got != want {
		t.Errorf("Request = %d, want %d", got, want)
	}
	if m := tokens.NewMeter(c); m.Request(req) != got || m.Scale(got) != got {
		t.Errorf("an uncalibrated meter changes the count")
	}
}

func TestMeterCalibrates(t *testing.T) {
	t.Parallel()
	m := tokens.NewMeter(tokens.Estimate{})
	if m.Ratio() != 1 {
		t.Fatalf("ratio before any reply %v", m.Ratio())
	}
	m.Observe(1000, llm.Usage{InputTokens: 200, CacheReadTokens: 900, CacheWriteTokens: 100}) // 1.2
	if r := m.Ratio(); r < 1.199 || r > 1.201 {
		t.Errorf("ratio %v, want 1.2", r)
	}
	if got := m.Scale(1000); got != 1200 {
		t.Errorf("Scale(1000) = %d", got)
	}
	m.Observe(1000, llm.Usage{InputTokens: 1000}) // 1.0: the average moves, the maximum keeps 1.2 out
	if r := m.Ratio(); r < 1.13 || r > 1.15 {
		t.Errorf("ratio after a lower reply %v, want the average 1.14", r)
	}
	m.Observe(1000, llm.Usage{InputTokens: 1500}) // a higher one counts at once
	if r := m.Ratio(); r < 1.499 || r > 1.501 {
		t.Errorf("ratio after a higher reply %v, want 1.5", r)
	}
	// Nonsense is ignored: no usage, or a ratio no tokenizer explains.
	m.Observe(1000, llm.Usage{})
	m.Observe(1000, llm.Usage{InputTokens: 100_000})
	m.Observe(0, llm.Usage{InputTokens: 10})
	if m.Observations() != 3 {
		t.Errorf("%d observations, want 3", m.Observations())
	}
}

func TestWindowAndBudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model       string
		reply, want int
		window      int
		known       bool
		budget      int
	}{
		{"claude-sonnet-4-5-20250929", 8192, 0, 200_000, true, 200_000 - 8192},
		{"gpt-4.1", 8192, 0, 1_047_576, true, 1_047_576 - 8192},
		{"gpt-4.1", 8192, 8000, 1_047_576, true, 8000},               // a job's budget lowers it
		{"gpt-4o", 8192, 500_000, 128_000, true, 128_000 - 8192},     // but never past the window
		{"llama3.1:8b", 4096, 0, 128_000, true, 128_000 - 4096},      // open models by family
		{"my-finetune", 4096, 0, tokens.DefaultWindow, false, 28672}, // unknown
		{"my-finetune", 4096, 100_000, tokens.DefaultWindow, false, 100_000},
		{"gpt-4.1", 8192, 100, 1_047_576, true, tokens.MinBudget},
	}
	for _, tt := range tests {
		w, known := tokens.Window(tt.model)
		if w != tt.window || known != tt.known {
			t.Errorf("Window(%q) = %d, %v; want %d, %v", tt.model, w, known, tt.window, tt.known)
		}
		if got := tokens.Budget(tt.model, tt.reply, tt.want); got != tt.budget {
			t.Errorf("Budget(%q, %d, %d) = %d, want %d", tt.model, tt.reply, tt.want, got, tt.budget)
		}
	}
}
