package agent_test

import (
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// When the sandbox goes away under the run (toolboxd killed, the container
// stopped), the run ends saying so after the step that found it, instead of
// feeding the model the same connection error until the stuck detector
// gives up.
func TestSandboxGoneEndsTheRun(t *testing.T) {
	t.Parallel()
	var b *bundle
	b = setup(t, agent.ProviderOpenAI, llmtest.Options{Func: func(r *llmtest.Request) llmtest.Turn {
		if r.N == 2 {
			if err := b.rt.Destroy(t.Context(), b.sb.ID); err != nil {
				t.Errorf("destroy the sandbox: %v", err)
			}
		}
		return llmtest.Turn{ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "echo still here"})}}
	}}, agent.Config{})
	_, err := b.run(t.Context(), job("Keep working."), nil)
	if drydock.ErrorCode(err) != drydock.EUNAVAILABLE || !strings.Contains(drydock.ErrorMessage(err), "toolbox stopped answering") {
		t.Fatalf("run ended with %v; want the toolbox named as gone", err)
	}
	if n := len(b.srv.Requests()); n != 2 {
		t.Errorf("the model was asked %d times; want 2 (the run ends after the step that found the sandbox gone)", n)
	}
	if errs := b.rec.ofType(drydock.EventError); len(errs) != 1 {
		t.Errorf("%d error events; want 1", len(errs))
	}
}
