package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/transcript"
)

// drydock message sends its argument, or standard input with -, and says
// where it went; bad text is refused before any request.
func TestMessageCommand(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	j := srv.AddJob(drydock.JobSpec{Task: "build it", Interactive: true}, time.Now())
	srv.SetStatus(j.ID, drydock.StatusRunning, "")

	r := newRun()
	if err := r.exec("message", j.ID, "use Postgres"); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "output", r.out.String(), "Sent to job "+j.ID, "drydock logs "+j.ID+" -f")

	r = newRun()
	r.stdin = "line one\nline two\n"
	if err := r.exec("message", j.ID, "-", "--json"); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "--json output", r.out.String(), `"type":"user_message"`)
	if got := srv.Messages(j.ID); len(got) != 2 || got[0] != "use Postgres" || got[1] != "line one\nline two\n" {
		t.Errorf("stored messages %q", got)
	}

	for _, tc := range []struct{ name, text, stdin, says string }{
		{"blank", "  ", "", "must not be blank"},
		{"blank stdin", "-", "\n", "must not be blank"},
		{"too long", "-", strings.Repeat("x", drydock.MaxMessageBytes+1), "the limit is 65536"},
	} {
		r = newRun()
		r.stdin = tc.stdin
		err := r.exec("message", j.ID, tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: error %v; want one saying %q", tc.name, err, tc.says)
		}
	}
	if got := srv.Messages(j.ID); len(got) != 2 {
		t.Errorf("refused messages were sent: %q", got)
	}

	r = newRun()
	if err := r.exec("message", "nope", "hi"); err == nil || !strings.Contains(err.Error(), "job nope not found") {
		t.Errorf("unknown job: %v", err)
	}
}

// drydock status shows the question an interactive job waits on, made
// safe for the terminal, and how to answer it.
func TestStatusShowsWaitingFor(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	j := srv.AddJob(drydock.JobSpec{Task: "build it", Interactive: true}, time.Now())
	srv.SetStatus(j.ID, drydock.StatusRunning, "")
	srv.SetWaitingFor(j.ID, "Postgres or SQLite?\x1b]0;pwned\x07")
	r := newRun()
	if err := r.exec("status", j.ID); err != nil {
		t.Fatal(err)
	}
	out := r.out.String()
	mustContain(t, "status", out, "Waiting for:", "Postgres or SQLite?", "drydock message "+j.ID+" TEXT")
	if strings.Contains(out, "\x1b") || strings.Contains(out, "\x07") {
		t.Errorf("status passed terminal controls through: %q", out)
	}
}

// drydock logs shows a message once (its delivery note names the event,
// not the text again) and an agent's question; both made safe.
func TestLogsShowMessages(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	j := srv.AddJob(drydock.JobSpec{Task: "t", Interactive: true}, time.Now())
	srv.SetStatus(j.ID, drydock.StatusRunning, "")
	srv.Emit(j.ID, drydock.EventLog, map[string]any{"level": "info", "kind": drydock.LogAskUser,
		"question": "Which port?", "message": "The agent asks: Which port?"})
	m := srv.Emit(j.ID, drydock.EventUserMessage, drydock.UserMessage{Text: "8080\x1b[2J", From: "alice"})
	srv.Emit(j.ID, drydock.EventLog, map[string]any{"level": "info", "kind": drydock.LogMessageDelivered, "seq": m.Seq,
		"notice": true, "message": "Message from the user:\n\n8080\x1b[2J"})
	r := newRun()
	if err := r.exec("logs", j.ID); err != nil {
		t.Fatal(err)
	}
	out := r.out.String()
	mustContain(t, "logs", out, "asks     Which port?", "message  (from alice) 8080^[[2J",
		fmt.Sprintf("the agent received the message of event %d", m.Seq))
	if strings.Count(out, "8080") != 1 || strings.Contains(out, "\x1b") {
		t.Errorf("logs:\n%s\nwant the message once, escaped", out)
	}
}

// drydock replay skips ask_user: it waited for a person, not the sandbox.
func TestReplaySkipsAskUser(t *testing.T) {
	t.Parallel()
	b := newTrajectory("0193aaaa-0000-7000-8000-0000000005e9")
	b.call("ask_user", `{"question": "Which port?"}`, &transcript.Observation{Output: "The user answered; their message follows."})
	b.call("finish", `{"summary": "done"}`, &transcript.Observation{Output: "The task is finished.", Summary: "done"})
	out, _, err := replayRun(t, "", b.write(t), "--runtime", "local", "--data-dir", t.TempDir(), "--json")
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	var r replayReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Steps) != 2 || r.Steps[0].Result != replaySkipped || !strings.Contains(r.Steps[0].Reason, "waits for a person") {
		t.Errorf("steps %+v; want ask_user skipped", r.Steps)
	}
}
