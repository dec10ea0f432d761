package e2e_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// Messages to a running job, end to end: the real binary
// runs the LLM agent against the scripted model in a real Docker sandbox.

// carries counts how often the prompt of req holds text.
func carries(req *llmtest.Request, text string) int {
	n := 0
	for _, m := range req.Messages {
		n += strings.Count(m.Text, text)
		for _, r := range m.ToolResults {
			n += strings.Count(r.Output, text)
		}
	}
	return n
}

// sendMessage posts a message to the job and returns the stored event.
func sendMessage(t *testing.T, s *server, id, text string) *drydock.Event {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"text": text})
	code, data := s.do("POST", "/v1/jobs/"+id+"/messages", "", string(body))
	if code != 202 {
		t.Fatalf("message: %d %s", code, data)
	}
	var ev drydock.Event
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	return &ev
}

// waitEvent polls the job's log until an event satisfies ok.
func waitEvent(t *testing.T, s *server, id string, within time.Duration, what string, ok func(*drydock.Event) bool) *drydock.Event {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, e := range s.events(id) {
			if ok(e) {
				return e
			}
		}
	}
	t.Fatalf("no %s in job %s's log within %s\n%s", what, id, within, s.logs)
	return nil
}

// deliveries returns the seqs the agent marked delivered.
func deliveries(t *testing.T, events []*drydock.Event) []int64 {
	t.Helper()
	var seqs []int64
	for _, e := range events {
		var n struct {
			Kind string `json:"kind"`
			Seq  int64  `json:"seq"`
		}
		if e.Type == drydock.EventLog && json.Unmarshal(e.Data, &n) == nil && n.Kind == drydock.LogMessageDelivered {
			seqs = append(seqs, n.Seq)
		}
	}
	return seqs
}

func dockerHost(t *testing.T) {
	t.Helper()
	if os.Getenv("DRYDOCK_TEST_DOCKER_HOST") == "" {
		t.Skip("DRYDOCK_TEST_DOCKER_HOST not set: no Docker engine to run sandboxes on (make test starts one)")
	}
}

// A message sent while a tool runs is in the model's next request, after
// the tool's result, and the model's answer to it is in the timeline.
func TestAgentMessageMidRunIsAnsweredInTheNextTurn(t *testing.T) {
	t.Parallel()
	dockerHost(t)
	const msg = "Use Postgres, not SQLite."
	e := newAgentEnv(t, "docker", "DRYDOCK_TEST_DOCKER_HOST", "openai", llmtest.Options{Func: func(r *llmtest.Request) llmtest.Turn {
		switch {
		case r.N == 1:
			// Long enough for the test to send its message meanwhile.
			return llmtest.Turn{Text: "Setting up.", ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "sleep 4; echo set up"}`)}}
		case r.N == 2 && carries(r, msg) > 0:
			return llmtest.Turn{Text: "Understood: switching to Postgres.", ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "echo postgres > db.txt"}`)}}
		case r.N == 2:
			return llmtest.Turn{Text: "I did not get the message."}
		}
		return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "Uses Postgres."}`)}}
	}})
	id := e.schedule(`{"task": "Set up the database."}`)
	call := waitEvent(t, e.server, id, 2*time.Minute, "bash call", func(ev *drydock.Event) bool { return ev.Type == drydock.EventToolCall })
	sent := sendMessage(t, e.server, id, msg)
	j, _ := e.waitTerminal(id, 2*time.Minute)
	if j.Status != drydock.StatusComplete || j.Summary != "Uses Postgres." {
		t.Fatalf("job: %s %q %q", j.Status, j.Summary, j.Error)
	}
	events := e.events(id)
	var observed int64
	for _, ev := range events {
		if ev.Type == drydock.EventObservation && observed == 0 {
			observed = ev.Seq
		}
	}
	if !(call.Seq < sent.Seq && sent.Seq < observed) {
		t.Errorf("the message (seq %d) was not stored while the tool ran (call %d, result %d)", sent.Seq, call.Seq, observed)
	}
	reqs := e.model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests; want 3", len(reqs))
	}
	if n := carries(reqs[0], msg); n != 0 {
		t.Errorf("request 1 carries the message %d times", n)
	}
	wasFed(t, reqs, 2, ok("set up"))
	if last := reqs[1].LastUser().Text; !strings.Contains(last, "Message from the user:\n\n"+msg) {
		t.Errorf("request 2's user turn %q lacks the message", last)
	}
	for i, r := range reqs[1:] {
		if n := carries(r, msg); n != 1 {
			t.Errorf("request %d carries the message %d times; want once", i+2, n)
		}
	}
	if got := deliveries(t, events); len(got) != 1 || got[0] != sent.Seq {
		t.Errorf("delivery marks %v; want one for seq %d", got, sent.Seq)
	}
	answered := false
	for _, ev := range events {
		answered = answered || ev.Type == drydock.EventModel && ev.Seq > sent.Seq && strings.Contains(string(ev.Data), "Understood: switching to Postgres.")
	}
	if !answered {
		t.Error("the model's answer to the message is not in the timeline")
	}
	if got := e.archive(id)["db.txt"]; got != "postgres\n" {
		t.Errorf("db.txt = %q", got)
	}
}

// kill -9 of the server while a message waits for the agent (stored while a
// tool runs): after the restart the resumed agent delivers it exactly once,
// in the first request after the restart.
func TestFaultKill9WithAMessagePendingDeliversItOnce(t *testing.T) {
	t.Parallel()
	dockerHost(t)
	const msg = "Stop and report what you have."
	e := newAgentEnv(t, "docker", "DRYDOCK_TEST_DOCKER_HOST", "anthropic", llmtest.Options{Func: func(r *llmtest.Request) llmtest.Turn {
		if r.N == 1 {
			return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "sleep 120"}`)}}
		}
		return llmtest.Turn{Text: "Stopping as asked.", ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "Stopped on request."}`)}}
	}})
	id := e.schedule(`{"task": "Run the long job."}`)
	waitEvent(t, e.server, id, 2*time.Minute, "bash call", func(ev *drydock.Event) bool { return ev.Type == drydock.EventToolCall })
	sent := sendMessage(t, e.server, id, msg)
	e.kill()
	if n := len(e.model.Requests()); n != 1 {
		t.Fatalf("%d model requests before the kill; want 1", n)
	}
	e.start()
	j, _ := e.waitTerminal(id, 3*time.Minute)
	if j.Status != drydock.StatusComplete || j.Summary != "Stopped on request." {
		t.Fatalf("job: %s %q %q", j.Status, j.Summary, j.Error)
	}
	reqs := e.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests; want 2 (one before the kill, one after)", len(reqs))
	}
	if n := carries(reqs[0], msg); n != 0 {
		t.Errorf("the request before the kill carries the message %d times", n)
	}
	if n := carries(reqs[1], msg); n != 1 {
		t.Errorf("the request after the restart carries the message %d times; want once", n)
	}
	if r := reqs[1].LastUser().ToolResults; len(r) != 1 || !r[0].IsError || !strings.Contains(r[0].Output, "interrupted") {
		t.Errorf("the call cut by the kill was answered %+v", r)
	}
	events := e.events(id)
	if got := deliveries(t, events); len(got) != 1 || got[0] != sent.Seq {
		t.Errorf("delivery marks %v; want one for seq %d", got, sent.Seq)
	}
	stored := 0
	for _, ev := range events {
		if ev.Type == drydock.EventUserMessage {
			stored++
		}
	}
	if stored != 1 {
		t.Errorf("%d user_message events; want the one sent", stored)
	}
}

// An interactive job's agent asks with ask_user: the job shows the question
// as waiting_for, the answer sent as a message reaches the model once, and
// the question is cleared; a second question nobody answers ends with the
// server's --ask-timeout.
func TestAgentAsksTheUserOnDocker(t *testing.T) {
	t.Parallel()
	dockerHost(t)
	const question, answer = "Postgres or SQLite?", "Postgres, please."
	e := newAgentEnv(t, "docker", "DRYDOCK_TEST_DOCKER_HOST", "openai", llmtest.Options{Func: func(r *llmtest.Request) llmtest.Turn {
		switch r.N {
		case 1:
			return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("ask_user", `{"question": "`+question+`"}`)}}
		case 2:
			return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("ask_user", `{"question": "Which port?"}`)}}
		}
		return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "Postgres on the default port."}`)}}
	}}, "--ask-timeout", "2s")
	id := e.schedule(`{"task": "Set up the database.", "interactive": true}`)
	for deadline := time.Now().Add(2 * time.Minute); e.status(id).WaitingFor != question; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the job never showed the question: %+v", e.status(id))
		}
	}
	sendMessage(t, e.server, id, answer)
	j, _ := e.waitTerminal(id, 2*time.Minute)
	if j.Status != drydock.StatusComplete || j.WaitingFor != "" || !j.Interactive {
		t.Fatalf("job: %s waiting_for=%q interactive=%v %q", j.Status, j.WaitingFor, j.Interactive, j.Error)
	}
	reqs := e.model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests; want 3", len(reqs))
	}
	if !slices.Contains(reqs[0].ToolNames(), "ask_user") {
		t.Errorf("tools offered %v; want ask_user", reqs[0].ToolNames())
	}
	wasFed(t, reqs, 2, ok("The user answered"))
	if last := reqs[1].LastUser().Text; !strings.Contains(last, "Message from the user:\n\n"+answer) {
		t.Errorf("request 2's user turn %q lacks the answer", last)
	}
	wasFed(t, reqs, 3, ok("Nobody answered within 2s"))
	if n := carries(reqs[2], answer); n != 1 {
		t.Errorf("request 3 carries the answer %d times; want once", n)
	}
}
