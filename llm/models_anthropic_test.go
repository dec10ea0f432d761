package llm_test

import (
	"testing"

	"github.com/drydockhq/drydock/llm"
)

// Claude models get the built-in tool versions and thinking of their
// generation; a model the table does not know for sure (a later 4.x that
// only shares a family prefix) gets neither, since a wrong version is
// refused where a custom tool always works.
func TestClaudeBuiltInsByModel(t *testing.T) {
	tests := []struct {
		model                    string
		bash, editor, computer   string
		thinking, budget, interl bool
	}{
		{"claude-opus-4-5-20251101", "bash_20250124", "text_editor_20250728", "computer_20251124", true, true, true},
		{"claude-opus-4-1-20250805", "bash_20250124", "text_editor_20250728", "computer_20250124", true, true, true},
		{"claude-opus-4-20250514", "bash_20250124", "text_editor_20250429", "computer_20250124", true, true, true},
		{"claude-sonnet-4-0", "bash_20250124", "text_editor_20250429", "computer_20250124", true, true, true},
		{"claude-sonnet-4-5", "bash_20250124", "text_editor_20250728", "computer_20250124", true, true, true},
		{"anthropic/claude-haiku-4-5", "bash_20250124", "text_editor_20250728", "computer_20250124", true, true, true},
		{"claude-3-7-sonnet-20250219", "bash_20250124", "", "computer_20250124", true, false, false},
		{"claude-3-5-haiku-latest", "", "", "", false, false, false},
		{"claude-opus-4-6", "", "", "", false, false, false},
		{"claude-sonnet-4-6", "", "", "", false, false, false},
		{"gpt-4.1", "", "", "", false, false, false},
	}
	for _, tt := range tests {
		m, _ := llm.LookupModel(tt.model)
		if m.BashTool != tt.bash || m.EditorTool != tt.editor || m.ComputerTool != tt.computer ||
			m.Thinking != tt.thinking || (m.ThinkingBudget > 0) != tt.budget || m.Interleaved != tt.interl {
			t.Errorf("%s: %+v", tt.model, m)
		}
	}
}
