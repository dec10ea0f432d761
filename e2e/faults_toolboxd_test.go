package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// killToolboxd kills the toolboxd of a sandbox on the engine at host with
// SIGKILL, from the host: the engine's init is the container's first
// process and toolboxd its child.
func killToolboxd(t *testing.T, host, sandboxID string) {
	t.Helper()
	out, err := exec.Command("docker", "-H", host, "inspect", "-f", "{{.State.Pid}}", sandboxID).Output()
	if err != nil {
		t.Fatalf("docker inspect %s: %v", sandboxID, err)
	}
	init := strings.TrimSpace(string(out))
	children, err := os.ReadFile(fmt.Sprintf("/proc/%s/task/%s/children", init, init))
	if err != nil {
		t.Fatalf("children of the sandbox's init %s: %v", init, err)
	}
	for _, c := range strings.Fields(string(children)) {
		comm, _ := os.ReadFile("/proc/" + c + "/comm")
		if strings.TrimSpace(string(comm)) == "toolboxd" {
			pid, _ := strconv.Atoi(c)
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatalf("kill toolboxd %d: %v", pid, err)
			}
			return
		}
	}
	t.Fatalf("no toolboxd among the children %q of the sandbox's init %s", children, init)
}

// toolboxd is killed inside the sandbox while the agent's command runs. The
// sandbox's init exits with it, so the sandbox is over: the job ends in
// error saying the sandbox's toolbox stopped answering, without asking the
// model again and again; the workspace (tmpfs inside the stopped sandbox)
// cannot be archived, which the job's log says, and the sandbox is removed.
func TestFaultToolboxdKilledInSandbox(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker CLI to find the sandbox's processes")
	}
	// A model that keeps trying whatever it is told.
	e := newAgentEnv(t, "docker", "DRYDOCK_TEST_DOCKER_HOST", "openai", llmtest.Options{Func: func(r *llmtest.Request) llmtest.Turn {
		switch r.N {
		case 1:
			return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "echo one > one.txt"}`)}}
		case 2:
			return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "sleep 120", "timeout": 300}`)}}
		}
		return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("bash", fmt.Sprintf(`{"command": "echo try %d"}`, r.N))}}
	}})
	id := e.schedule(`{"task": "Work in the sandbox.", "max_steps": 30}`)
	for deadline := time.Now().Add(2 * time.Minute); !sleeping120(e.events(id)); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) || e.status(id).Status.Terminal() {
			t.Fatalf("the job never reached sleep 120: %+v", e.status(id))
		}
	}
	sbs := engineSandboxes(t, e.host, map[string]string{drydock.LabelJob: id})
	if len(sbs) != 1 {
		t.Fatalf("job %s has %d sandboxes", id, len(sbs))
	}
	killed := time.Now()
	killToolboxd(t, e.host, sbs[0].ID)

	j, seen := e.waitTerminal(id, 3*time.Minute)
	took := time.Since(killed)
	t.Logf("toolboxd killed; job ended %s %s later after %d model requests (seen %v): %s", j.Status, took.Round(time.Millisecond), len(e.model.Requests()), seen, j.Error)
	if j.Status != drydock.StatusError || !strings.Contains(j.Error, "toolbox") {
		t.Fatalf("job: %s %q; want an error naming the sandbox's toolbox", j.Status, j.Error)
	}
	if n := len(e.model.Requests()); n > 4 {
		t.Errorf("the model was asked %d times; a dead sandbox must end the job, not feed errors to the model", n)
	}
	if j.DownloadURL != "" {
		t.Errorf("the job offers an archive (%s) of a workspace nobody could read", j.DownloadURL)
	}
	said := false
	for _, ev := range e.events(id) {
		said = said || ev.Type == drydock.EventError && strings.Contains(string(ev.Data), "archiving the workspace failed")
	}
	if !said {
		t.Error("the job's log does not say the workspace could not be archived")
	}
	e.noSandboxLeft(id)
}

func sleeping120(events []*drydock.Event) bool {
	for _, ev := range events {
		if ev.Type == drydock.EventToolCall && strings.Contains(string(ev.Data), "sleep 120") {
			return true
		}
	}
	return false
}
