package llm

import "strings"

// Model holds what the agent needs to know about a model. Prices are USD
// per million tokens.
type Model struct {
	Prefix        string // matched against the model name; the longest match wins
	ContextWindow int    // tokens
	Images        bool   // accepts images in the prompt
	Input         float64
	Output        float64
	CacheRead     float64
	CacheWrite    float64
	// Anthropic's built-in tools the model was trained on: the versioned
	// types of its bash, text editor and computer tools ("" where it has
	// none, and the tool goes as a custom one). See llm/anthropic.
	BashTool, EditorTool, ComputerTool string
	// Extended thinking: Thinking says the model can think, ThinkingBudget
	// is the budget (tokens) it thinks with unless configured otherwise (0:
	// off by default), Interleaved that it can think between tool calls.
	Thinking       bool
	ThinkingBudget int
	Interleaved    bool
	// MaxOutput is the most max_tokens the model takes (0: not known),
	// thinking included.
	MaxOutput int
}

// models are the public list prices (standard tier, prompts under any
// long-context surcharge) as of late 2025. Names match by prefix so that
// dated snapshots ("claude-sonnet-4-5-20250929", "gpt-4o-2024-08-06") find
// their family. A model that is not here costs 0 and says so (see Cost).
var models = []Model{
	// Anthropic: cache writes (5-minute TTL) cost 1.25x input, reads 0.1x.
	// Claude 4 models think with 4096 tokens by default, between tool calls
	// too. The computer tool's newest version (zoom) is Opus 4.5's; the
	// newest text editor (max_characters, no undo_edit) is Claude 4.1's
	// and later. Claude 3.7's text editor is named str_replace_editor, not
	// the agent's tool name, so it gets the custom one.
	{Prefix: "claude-opus-4-5", ContextWindow: 200_000, Images: true, Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25,
		BashTool: "bash_20250124", EditorTool: "text_editor_20250728", ComputerTool: "computer_20251124", Thinking: true, ThinkingBudget: 4096, Interleaved: true, MaxOutput: 64000},
	{Prefix: "claude-opus-4-1", ContextWindow: 200_000, Images: true, Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75,
		BashTool: "bash_20250124", EditorTool: "text_editor_20250728", ComputerTool: "computer_20250124", Thinking: true, ThinkingBudget: 4096, Interleaved: true, MaxOutput: 32000},
	{Prefix: "claude-opus-4-0", ContextWindow: 200_000, Images: true, Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75,
		BashTool: "bash_20250124", EditorTool: "text_editor_20250429", ComputerTool: "computer_20250124", Thinking: true, ThinkingBudget: 4096, Interleaved: true, MaxOutput: 32000},
	{Prefix: "claude-opus-4-2025", ContextWindow: 200_000, Images: true, Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75,
		BashTool: "bash_20250124", EditorTool: "text_editor_20250429", ComputerTool: "computer_20250124", Thinking: true, ThinkingBudget: 4096, Interleaved: true, MaxOutput: 32000},
	// A later Claude 4.x not listed here gets the family's price but
	// custom tools and no thinking: what it was trained on is not known.
	{Prefix: "claude-opus-4", ContextWindow: 200_000, Images: true, Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
	{Prefix: "claude-sonnet-4-5", ContextWindow: 200_000, Images: true, Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75,
		BashTool: "bash_20250124", EditorTool: "text_editor_20250728", ComputerTool: "computer_20250124", Thinking: true, ThinkingBudget: 4096, Interleaved: true, MaxOutput: 64000},
	{Prefix: "claude-sonnet-4-0", ContextWindow: 200_000, Images: true, Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75,
		BashTool: "bash_20250124", EditorTool: "text_editor_20250429", ComputerTool: "computer_20250124", Thinking: true, ThinkingBudget: 4096, Interleaved: true, MaxOutput: 64000},
	{Prefix: "claude-sonnet-4-2025", ContextWindow: 200_000, Images: true, Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75,
		BashTool: "bash_20250124", EditorTool: "text_editor_20250429", ComputerTool: "computer_20250124", Thinking: true, ThinkingBudget: 4096, Interleaved: true, MaxOutput: 64000},
	{Prefix: "claude-sonnet-4", ContextWindow: 200_000, Images: true, Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	{Prefix: "claude-3-7-sonnet", ContextWindow: 200_000, Images: true, Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75,
		BashTool: "bash_20250124", ComputerTool: "computer_20250124", Thinking: true, MaxOutput: 64000},
	{Prefix: "claude-3-5-sonnet", ContextWindow: 200_000, Images: true, Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	{Prefix: "claude-haiku-4-5", ContextWindow: 200_000, Images: true, Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25,
		BashTool: "bash_20250124", EditorTool: "text_editor_20250728", ComputerTool: "computer_20250124", Thinking: true, ThinkingBudget: 4096, Interleaved: true, MaxOutput: 64000},
	{Prefix: "claude-3-5-haiku", ContextWindow: 200_000, Images: true, Input: 0.8, Output: 4, CacheRead: 0.08, CacheWrite: 1},
	// OpenAI: cached input is billed at the cache-read price; writing the
	// cache costs what input costs (CacheWrite 0 means the input price).
	{Prefix: "gpt-5-nano", ContextWindow: 400_000, Images: true, Input: 0.05, Output: 0.4, CacheRead: 0.005},
	{Prefix: "gpt-5-mini", ContextWindow: 400_000, Images: true, Input: 0.25, Output: 2, CacheRead: 0.025},
	{Prefix: "gpt-5", ContextWindow: 400_000, Images: true, Input: 1.25, Output: 10, CacheRead: 0.125},
	{Prefix: "gpt-4.1-nano", ContextWindow: 1_047_576, Images: true, Input: 0.1, Output: 0.4, CacheRead: 0.025},
	{Prefix: "gpt-4.1-mini", ContextWindow: 1_047_576, Images: true, Input: 0.4, Output: 1.6, CacheRead: 0.1},
	{Prefix: "gpt-4.1", ContextWindow: 1_047_576, Images: true, Input: 2, Output: 8, CacheRead: 0.5},
	{Prefix: "gpt-4o-mini", ContextWindow: 128_000, Images: true, Input: 0.15, Output: 0.6, CacheRead: 0.075},
	{Prefix: "gpt-4o", ContextWindow: 128_000, Images: true, Input: 2.5, Output: 10, CacheRead: 1.25},
	{Prefix: "o4-mini", ContextWindow: 200_000, Images: true, Input: 1.1, Output: 4.4, CacheRead: 0.275},
	{Prefix: "o3", ContextWindow: 200_000, Images: true, Input: 2, Output: 8, CacheRead: 0.5},
}

// LookupModel returns what is known of a model, and whether anything is.
// A provider prefix ("openai/gpt-4o", as OpenRouter names them) is ignored.
func LookupModel(name string) (Model, bool) {
	name = strings.ToLower(name)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	var best Model
	found := false
	for _, m := range models {
		if strings.HasPrefix(name, m.Prefix) && len(m.Prefix) > len(best.Prefix) {
			best, found = m, true
		}
	}
	return best, found
}

// Cost estimates the USD cost of one request's usage. For a model without
// a known price it returns 0 and false.
func Cost(model string, u Usage) (float64, bool) {
	m, ok := LookupModel(model)
	if !ok {
		return 0, false
	}
	write := m.CacheWrite
	if write == 0 {
		write = m.Input
	}
	c := float64(u.InputTokens)*m.Input + float64(u.OutputTokens)*m.Output +
		float64(u.CacheReadTokens)*m.CacheRead + float64(u.CacheWriteTokens)*write
	return c / 1e6, true
}
