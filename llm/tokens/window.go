package tokens

import (
	"strings"

	"github.com/drydockhq/drydock/llm"
)

// DefaultWindow is the context window assumed for a model nothing is known
// of: small enough for most models served locally.
const DefaultWindow = 32_768

// MinBudget is the smallest prompt budget accepted: the system prompt and
// the tool definitions alone take about 2,500 tokens.
const MinBudget = 4000

// windows are the context windows of models llm.LookupModel has no price
// for, mostly open models behind OpenAI-compatible servers; the longest
// prefix wins.
var windows = []struct {
	prefix string
	tokens int
}{
	{"gpt-4-turbo", 128_000},
	{"gpt-4-32k", 32_768},
	{"gpt-4", 8_192},
	{"gpt-3.5-turbo", 16_385},
	{"o1", 200_000},
	{"o3-mini", 200_000},
	{"gemini-1.5", 1_000_000},
	{"gemini-2", 1_000_000},
	{"llama-4", 1_000_000},
	{"llama-3.1", 128_000},
	{"llama-3.2", 128_000},
	{"llama-3.3", 128_000},
	{"llama3.1", 128_000},
	{"llama3.2", 128_000},
	{"llama3.3", 128_000},
	{"qwen2.5-coder", 32_768},
	{"qwen3", 32_768},
	{"deepseek-chat", 64_000},
	{"deepseek-reasoner", 64_000},
	{"deepseek-coder", 128_000},
	{"mistral-large", 128_000},
	{"codestral", 256_000},
	{"grok-4", 256_000},
}

// Window returns a model's context window in tokens and whether it is
// known; unknown models get DefaultWindow.
func Window(model string) (int, bool) {
	if m, ok := llm.LookupModel(model); ok && m.ContextWindow > 0 {
		return m.ContextWindow, true
	}
	name := strings.ToLower(model)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	best, n := "", 0
	for _, w := range windows {
		if strings.HasPrefix(name, w.prefix) && len(w.prefix) > len(best) {
			best, n = w.prefix, w.tokens
		}
	}
	if best == "" {
		return DefaultWindow, false
	}
	return n, true
}

// Budget is the largest prompt (in tokens, as the provider counts them) a
// request to the model may carry when the reply may take up to reply
// tokens. A positive want (a job's setting) replaces it, though never past
// the window of a known model; the result is never below MinBudget.
func Budget(model string, reply, want int) int {
	window, known := Window(model)
	b := window - reply
	if want > 0 && (want < b || !known) {
		b = want
	}
	return max(b, MinBudget)
}
