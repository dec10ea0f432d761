package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock/toolbox"
)

// startAbandoned starts a command whose caller goes away while toolboxd
// waits on it, as when the orchestrator is killed mid-command: the wait
// goes on, holding the session, until the command ends.
func (b *bundle) startAbandoned(id, command string) {
	b.t.Helper()
	body, _ := json.Marshal(toolbox.RunRequest{Command: command, IdleTimeout: dur(time.Hour), Timeout: dur(time.Hour)})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", b.ts.URL+"/v1/sessions/"+id+"/run", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		if resp, err := b.ts.Client().Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	for !b.sessionInfo(id).Running {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-gone
}

// After an orchestrator restart the agent's next command found its shell
// held by the dead orchestrator's wait and queued behind it for 107 s with
// no word. A command sent to a busy session is refused at once, naming what
// runs; a wait takes over from the abandoned one.
func TestBusySessionSaysSoAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.session("s")
	b.startAbandoned("s", "sleep 60")

	r := b.do("POST", "/v1/sessions/s/run", toolbox.RunRequest{Command: "echo next"})
	if r.status != http.StatusConflict || r.errCode() != "conflict" {
		t.Fatalf("command to a busy session: %d %s", r.status, r.body)
	}
	for _, want := range []string{"still running in session s", "`sleep 60`", "run with no command to wait for it"} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("conflict %s lacks %q", r.body, want)
		}
	}
	if info := b.sessionInfo("s"); info.Command != "sleep 60" || info.CommandStartedAt.IsZero() {
		t.Errorf("session info %+v; want the running command", info)
	}

	// A wait takes over: it returns when the command is quiet for its idle
	// timeout, not when the abandoned wait would have ended.
	res := b.run("s", toolbox.RunRequest{IdleTimeout: dur(200 * time.Millisecond)})
	if !res.Running {
		t.Errorf("wait: %+v", res)
	}
	var ir toolbox.RunResult
	b.ok(http.StatusOK, &ir, "POST", "/v1/sessions/s/interrupt", nil)
	if ir.Running || !ir.Interrupted {
		t.Errorf("interrupt: %+v", ir)
	}
	if res := b.run("s", toolbox.RunRequest{Command: "echo next"}); res.Output != "next\n" {
		t.Errorf("after the interrupt: %+v", res)
	}
	if info := b.sessionInfo("s"); info.Running || info.Command != "" {
		t.Errorf("idle session info %+v", info)
	}
}

// The wait that was taken over returns at once with the command still
// running and leaves its output to the new waiter.
func TestWaitTakenOverLeavesTheOutputToTheNewWaiter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.session("s")
	first := make(chan toolbox.RunResult, 1)
	go func() {
		var res toolbox.RunResult
		b.ok(http.StatusOK, &res, "POST", "/v1/sessions/s/run",
			toolbox.RunRequest{Command: "echo early; sleep 60", IdleTimeout: dur(time.Hour)})
		first <- res
	}()
	for !b.sessionInfo("s").Running {
		time.Sleep(10 * time.Millisecond)
	}
	second := b.run("s", toolbox.RunRequest{IdleTimeout: dur(200 * time.Millisecond)})
	got := <-first
	if !got.Running || got.Output != "" {
		t.Errorf("the wait taken over: %+v", got)
	}
	if !second.Running || second.Output != "early\n" {
		t.Errorf("the new wait: %+v", second)
	}
	b.ok(http.StatusOK, nil, "POST", "/v1/sessions/s/interrupt", nil)
}

func TestClipCommand(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"sleep 150":                        "sleep 150",
		"  make test\n":                    "make test",
		"cd x\nmake":                       "cd x ...",
		strings.Repeat("é", 100):           strings.Repeat("é", 60) + " ...",
		"echo " + strings.Repeat("a", 200): "echo " + strings.Repeat("a", 115) + " ...",
	} {
		if got := clipCommand(in, 120); got != want {
			t.Errorf("clipCommand(%q) = %q; want %q", in, got, want)
		}
	}
}
