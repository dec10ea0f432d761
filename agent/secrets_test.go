package agent_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
	"github.com/drydockhq/drydock/toolbox"
)

// A job's secret values are masked in everything the agent records and in
// everything it sends to the model, although its commands print them and
// its files hold them; the sandbox's processes still see the real value.
func TestJobSecretsAreMasked(t *testing.T) {
	t.Parallel()
	apis(t, func(t *testing.T, api string) {
		const canary = "agent-canary-91d04e2b"
		b := setup(t, api, llmtest.Options{}, agent.Config{})
		// What the runner does before the agent runs.
		box := toolbox.New(b.sb.Endpoint, b.sb.Token)
		defer box.Close()
		if _, err := box.SetEnv(t.Context(), map[string]string{"CANARY": canary}); err != nil {
			t.Fatal(err)
		}
		b.srv.Add(
			llmtest.Turn{ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": `test "$CANARY" = "` + canary + `" && echo secret-ok; env; printf '%s\n' "$CANARY" > leak.txt`})}},
			llmtest.Turn{ToolCalls: []llm.ToolCall{call("str_replace_based_edit_tool", map[string]string{"command": "view", "path": "leak.txt"})}},
			llmtest.Turn{ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "no-such-command-" + canary})}},
			finish("The secret was "+canary+"."),
		)
		j := job("Leak the secret.")
		j.Secrets = drydock.SecretValues{"CANARY": canary}
		out, err := b.run(t.Context(), j, nil)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.Summary, canary) || !strings.Contains(out.Summary, agent.Redacted) {
			t.Errorf("summary %q", out.Summary)
		}
		if got := b.file(t, "leak.txt"); got != canary+"\n" {
			t.Fatalf("the sandbox's process did not see the value: leak.txt = %q", got)
		}
		sawOK := false
		for _, e := range b.rec.Events() {
			if bytes.Contains(e.Data, []byte(canary)) {
				t.Errorf("event %d (%s) holds the value: %s", e.Seq, e.Type, e.Data)
			}
			sawOK = sawOK || bytes.Contains(e.Data, []byte("secret-ok"))
		}
		if !sawOK {
			t.Error("no event shows secret-ok: the command did not run as scripted")
		}
		reqs := b.srv.Requests()
		if len(reqs) < 4 {
			t.Fatalf("%d model requests; want 4", len(reqs))
		}
		for _, r := range reqs {
			if bytes.Contains(r.Body, []byte(canary)) {
				t.Errorf("model request %d holds the value", r.N)
			}
		}
		// The tool output reached the model, masked.
		if last := reqs[len(reqs)-1].Body; !bytes.Contains(last, []byte(agent.Redacted)) || !bytes.Contains(last, []byte("secret-ok")) {
			t.Errorf("the last model request lacks the masked tool output")
		}
	})
}
