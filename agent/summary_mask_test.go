package agent_test

import (
	"strings"
	"testing"

	"github.com/drydockhq/drydock/agent"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// The finish summary becomes the job's summary, which is stored outside the
// masked event log: a summary quoting the API key or the sandbox's token
// comes out masked.
func TestFinishSummaryIsMasked(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{}, agent.Config{})
	b.srv.Add(finish("Done. The key was " + llmtest.TestKey + " and the sandbox token " + b.sb.Token + "."))
	out, err := b.run(t.Context(), job("Say the secrets."), nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.Summary, llmtest.TestKey) || strings.Contains(out.Summary, b.sb.Token) || !strings.Contains(out.Summary, agent.Redacted) {
		t.Errorf("summary %q", out.Summary)
	}
}
