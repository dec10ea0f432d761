package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// waitEvent polls the job's log until an event of typ appears.
func (s *server) waitEvent(id string, typ drydock.EventType, within time.Duration) {
	s.t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, e := range s.events(id) {
			if e.Type == typ {
				return
			}
		}
	}
	s.t.Fatalf("job %s logged no %s event within %s\n%s", id, typ, within, s.logs)
}

func countEvents(es []*drydock.Event, typ drydock.EventType) int {
	n := 0
	for _, e := range es {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// A job paused for 30 s makes no model call in
// that time and then finishes. The pause comes while a tool call runs: the
// call finishes, the next does not start, and the lease outlives three of
// its TTLs without the job being taken for dead.
func TestPausedJobMakesNoModelCalls(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, "docker", "DRYDOCK_TEST_DOCKER_HOST", "anthropic", llmtest.Options{Turns: []llmtest.Turn{
		{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "sleep 3; echo slow > slow.txt"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "echo after > after.txt"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "Both files written."}`)}},
	}})
	id := e.schedule(`{"task": "Write slow.txt, then after.txt."}`)
	e.waitEvent(id, drydock.EventToolCall, 2*time.Minute)

	code, data := e.do("POST", "/v1/jobs/"+id+"/pause", "", "")
	if code != 200 || !strings.Contains(string(data), `"paused":true`) {
		t.Fatalf("pause: %d %s", code, data)
	}
	const pause = 30 * time.Second
	t0 := time.Now()
	// The sleeping call finishes within the pause.
	e.waitEvent(id, drydock.EventObservation, 20*time.Second)
	time.Sleep(pause - time.Since(t0))

	if n := len(e.model.Requests()); n != 1 {
		t.Fatalf("the model got %d requests during a %s pause; want only the one before it", n, pause)
	}
	es := e.events(id)
	if n := countEvents(es, drydock.EventToolCall); n != 1 {
		t.Fatalf("%d tool calls started; the one after the pause must wait", n)
	}
	j := e.status(id)
	if j.Status != drydock.StatusRunning || !j.Paused || j.PausedSeconds < pause.Seconds()-1 {
		t.Fatalf("job during the pause: %s paused=%v paused_seconds=%v", j.Status, j.Paused, j.PausedSeconds)
	}
	code, data = e.do("POST", "/v1/jobs/"+id+"/resume", "", "")
	if code != 200 || strings.Contains(string(data), `"paused":true`) {
		t.Fatalf("resume: %d %s", code, data)
	}

	j, _ = e.waitTerminal(id, 2*time.Minute)
	if j.Status != drydock.StatusComplete || j.Steps != 3 || j.Paused || j.PausedSeconds < pause.Seconds()-1 {
		t.Fatalf("job: %s steps=%d paused=%v paused_seconds=%v err=%q\n%s", j.Status, j.Steps, j.Paused, j.PausedSeconds, j.Error, e.logs)
	}
	files := e.archive(id)
	if files["slow.txt"] != "slow\n" || files["after.txt"] != "after\n" {
		t.Errorf("archive: slow.txt=%q after.txt=%q", files["slow.txt"], files["after.txt"])
	}
	reqs := e.model.Requests()
	wasFed(t, reqs, 2, ok(""))
	if got := reqs[1].LastUser().Text; !strings.Contains(got, "The job was paused from") || !strings.Contains(got, "by local user") {
		t.Errorf("the prompt after the pause says %q; want the pause told", got)
	}
	es = e.events(id)
	if countEvents(es, drydock.EventPaused) != 1 || countEvents(es, drydock.EventResumed) != 1 {
		t.Errorf("events: %d paused, %d resumed; want one each", countEvents(es, drydock.EventPaused), countEvents(es, drydock.EventResumed))
	}
	for _, ev := range es {
		if ev.Type == drydock.EventLog && strings.Contains(string(ev.Data), "resuming on") {
			t.Errorf("the paused job was taken for dead and resumed: %s", ev.Data)
		}
	}
	e.noSandboxLeft(id)
}
