package e2e_test

import (
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// The agent kills what toolboxd supervises inside a desktop sandbox: the VNC
// server and the display (as the agent's own user, which owns them), and
// its Python kernel in the middle of a run. Each comes back by itself: the
// next screenshot waits for the restarted display and reaches the model,
// the call the kernel died under answers that it died, the next one runs in
// a fresh kernel, and the job completes.
func TestFaultDesktopAndKernelKilledInSandbox(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, "docker", "DRYDOCK_TEST_DOCKER_HOST", "anthropic", llmtest.Options{Turns: []llmtest.Turn{
		{ToolCalls: []llm.ToolCall{llmtest.Call("computer", `{"action": "screenshot"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "pkill -KILL -x x11vnc && pkill -KILL -x Xvfb && echo both-killed"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("computer", `{"action": "screenshot"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("execute_code", `{"language": "python", "code": "x = 41\nprint('set', x)"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("execute_code", `{"language": "python", "code": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("execute_code", `{"language": "python", "code": "print('fresh', 6 * 7, 'x' in globals())"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "Survived the desktop and the kernel dying."}`)}},
	}})
	_, j := e.run(`{"task": "Break the desktop and the kernel, then carry on.", "profile": "desktop"}`, 4*time.Minute)
	if j.Status != drydock.StatusComplete {
		t.Fatalf("job: %s %q\n%s", j.Status, j.Error, e.logs)
	}
	reqs := e.model.Requests()
	wasFed(t, reqs, 2, ok("Screenshot of the screen"))
	wasFed(t, reqs, 3, ok("both-killed"))
	wasFed(t, reqs, 4, ok("Screenshot of the screen"))
	if len(reqs) >= 4 {
		if rs := reqs[3].LastUser().ToolResults; len(rs) != 1 || len(rs[0].Images) != 1 {
			t.Errorf("the screenshot after the display was killed reached the model without an image: %+v", rs)
		}
	}
	wasFed(t, reqs, 5, ok("set 41"))
	wasFed(t, reqs, 6, failed("kernel died"))
	wasFed(t, reqs, 7, ok("fresh 42 False"))
}
