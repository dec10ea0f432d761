package e2e_test

import (
	"bytes"
	"net/http"
	"net/http/cookiejar"
	"os"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
	"github.com/drydockhq/drydock/toolbox"
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
		{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "pkill -KILL -x x11vnc; pkill -KILL -x Xvfb && echo display-killed"}`)}},
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
	// x11vnc may still be starting (the screenshot waited for the display
	// only); the display is surely up.
	wasFed(t, reqs, 3, ok("display-killed"))
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

// The Jupyter server a person has open is killed inside the sandbox: the
// orchestrator's proxy answers 503 while toolboxd restarts it, then the
// same session (cookie, base URL) reaches the new server, and the job runs
// on untouched.
func TestFaultJupyterServerKilledInSandbox(t *testing.T) {
	t.Parallel()
	host := os.Getenv("DRYDOCK_TEST_DOCKER_HOST")
	if host == "" {
		t.Skip("DRYDOCK_TEST_DOCKER_HOST not set: no docker engine to run sandboxes on (make test starts one)")
	}
	rt := engineRuntime(t, host)
	s := dockerServer(t, host)
	s.start()
	id := s.schedule(`{"task": "keep going [fake:steps=1] [fake:delay=0s] [fake:hang]"}`)
	link := jupyterLink(t, s, id, "")
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := hc.Get(link) // trades the link for the session cookie
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	status := s.url() + "/jobs/" + id + "/jupyter/api/status"
	get := func() int {
		resp, err := hc.Get(status)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitOK := func(what string) time.Duration {
		t.Helper()
		start := time.Now()
		for deadline := start.Add(2 * time.Minute); get() != 200; time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: Jupyter's API did not answer 200 within 2 minutes (last %d)", what, get())
			}
		}
		return time.Since(start)
	}
	waitOK("first start")

	sb := jobSandbox(t, rt, s.node, id)
	tb := toolbox.New(sb.Endpoint, sb.Token)
	defer tb.Close()
	var out, errOut bytes.Buffer
	res, err := tb.Exec(t.Context(), toolbox.ExecRequest{Args: []string{"pkill", "-KILL", "-f", "--", "-m jupyter_server"}, Timeout: drydock.Duration(time.Minute)}, &out, &errOut)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("kill the Jupyter server: %v %+v %s%s", err, res, out.String(), errOut.String())
	}
	killed := time.Now()
	sawDown := false
	for deadline := killed.Add(10 * time.Second); time.Now().Before(deadline) && !sawDown; time.Sleep(50 * time.Millisecond) {
		sawDown = get() != 200
	}
	waitOK("after the kill")
	t.Logf("Jupyter answered again %s after its server was killed (a failed answer seen in between: %v)", time.Since(killed).Round(time.Millisecond), sawDown)
	if j := s.status(id); j.Status != drydock.StatusRunning {
		t.Errorf("the job is %s after its Jupyter server was killed; want it running on", j.Status)
	}
}
