package e2e_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
	"github.com/drydockhq/drydock/runtime/runtimetest"
)

// The red team's case through the real binary: the server is killed with
// SIGKILL while the agent's shell runs `sleep 150`. Before, the recovered
// agent's next bash call waited out the sleep (107 s) with no word; now the
// recovering server interrupts it, the model is told, and the next command
// runs at once in the same shell.
func TestRecoveredJobGetsItsShellBackAfterKill9(t *testing.T) {
	t.Parallel()
	for _, eng := range engines() {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			host := os.Getenv(eng.env)
			if host == "" {
				t.Skipf("%s not set: no %s engine to run sandboxes on (make test starts one)", eng.env, eng.name)
			}
			// The running command's text comes from toolboxd API 5, which
			// the prebuilt image may predate.
			img := runtimetest.CurrentImage(t, host)
			e := newAgentEnv(t, eng.name, eng.env, "openai", llmtest.Options{Turns: []llmtest.Turn{
				{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "cd /tmp && touch /workspace/started && sleep 150", "timeout": 200}`)}},
				{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "echo hi from $PWD"}`)}},
				{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "Said hi."}`)}},
			}}, "--image-headless", img)
			id := e.schedule(`{"task": "Sleep, then say hi."}`)
			deadline := time.Now().Add(2 * time.Minute)
			for {
				if code, _ := e.do("GET", "/v1/jobs/"+id+"/files/started", "", ""); code == 200 {
					break
				}
				if time.Now().After(deadline) || e.status(id).Status.Terminal() {
					t.Fatalf("the job never reached its sleep: %+v\n%s", e.status(id), e.logs)
				}
				time.Sleep(100 * time.Millisecond)
			}
			e.kill()
			t0 := time.Now()
			e.start()
			j, _ := e.waitTerminal(id, 2*time.Minute)
			took := time.Since(t0)
			t.Logf("%s: recovered job ended %s %s after the restart", eng.name, j.Status, took.Round(time.Millisecond))
			if j.Status != drydock.StatusComplete {
				t.Fatalf("job: %s %q\n%s", j.Status, j.Error, e.logs)
			}
			// The sleep had 150 s to go; waiting it out is the bug.
			if took > 60*time.Second {
				t.Errorf("the recovered job took %s: its shell waited for the sleep", took)
			}
			reqs := e.model.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d model requests; want 3", len(reqs))
			}
			if text := reqs[1].LastUser().Text; !strings.Contains(text, "The orchestrator restarted while") ||
				!strings.Contains(text, "sleep 150") || !strings.Contains(text, "interrupted (Ctrl-C)") {
				t.Errorf("the resumed prompt does not say what happened to the shell: %q", text)
			}
			wasFed(t, reqs, 3, ok("hi from /tmp"))
		})
	}
}
