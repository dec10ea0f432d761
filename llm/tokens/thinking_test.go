package tokens_test

import (
	"strings"
	"testing"

	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/tokens"
)

// Thinking sent back with its turn is part of the prompt.
func TestMessageCountsThinking(t *testing.T) {
	c := tokens.For("anthropic", "claude-sonnet-4-5")
	plain := llm.Message{Role: llm.RoleAssistant, Text: "Done."}
	thought := plain
	thought.Reasoning = llm.ThinkingReasoning([]llm.Thinking{{Text: strings.Repeat("think about it ", 100), Signature: "sig"}, {Redacted: strings.Repeat("QUJD", 400)}})
	if a, b := tokens.Message(c, plain), tokens.Message(c, thought); b-a < 300 {
		t.Errorf("%d tokens without thinking, %d with; want the thinking counted", a, b)
	}
}
