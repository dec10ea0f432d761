package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
)

// drydock schedule --agent none needs no task, sends the agent through the
// job spec, and tells the user how to use the held sandbox.
func TestScheduleAgentNoneHoldsASandbox(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	r := newRun()
	if err := r.exec("schedule", "--agent", "none", "--timeout", "1h"); err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(r.out.String())
	j := srv.Job(id)
	if j == nil || j.Agent != drydock.AgentNone || j.Task != "" {
		t.Fatalf("the server got %+v; want a job with agent none and no task", j)
	}
	mustContain(t, "stderr", r.err.String(), "drydock exec "+id+" -- COMMAND", "drydock put "+id+" PATH < FILE", "drydock cancel "+id)

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"schedule"}, "a task is required"},
		{[]string{"schedule", "--agent", "gpt", "x"}, "agent must be omitted"},
		{[]string{"schedule", "--agent", "none", "--interactive"}, "interactive"},
	} {
		srv, newRun := setupFake(t)
		err := newRun().exec(tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v; want one saying %q", tt.args, err, tt.want)
		}
		if n := len(srv.Jobs()); n != 0 {
			t.Errorf("%v: %d jobs created", tt.args, n)
		}
	}
}

// heldServer answers the held sandbox's routes as the API does, and
// records what the CLI sent.
type heldServer struct {
	*httptest.Server
	mu       sync.Mutex
	commands []map[string]any
	writes   map[string]string
	result   client.CommandResult // the answer to the next command
}

const heldJob = "01a2b3c4-0000-7000-8000-000000000001"

func newHeldServer(t *testing.T) *heldServer {
	h := &heldServer{writes: map[string]string{}}
	mux := http.NewServeMux()
	notFound := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(404)
		w.Write([]byte(`{"error":{"code":"not_found","message":"job not found"}}`))
	}
	mux.HandleFunc("POST /v1/jobs/{id}/commands", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != heldJob {
			notFound(w)
			return
		}
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		h.mu.Lock()
		h.commands = append(h.commands, body)
		res := h.result
		h.mu.Unlock()
		res.JobID = heldJob
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(res)
	})
	mux.HandleFunc("PUT /v1/jobs/{id}/files/{path...}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != heldJob {
			notFound(w)
			return
		}
		var body struct{ Text string }
		json.NewDecoder(r.Body).Decode(&body)
		h.mu.Lock()
		h.writes[r.PathValue("path")] = body.Text
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(client.WrittenFile{JobID: heldJob, Path: r.PathValue("path"), Size: int64(len(body.Text))})
	})
	h.Server = httptest.NewServer(mux)
	t.Cleanup(h.Close)
	return h
}

func (h *heldServer) run(t *testing.T) *cliRun { return &cliRun{t: t, url: h.URL} }

func (h *heldServer) lastCommand() map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.commands) == 0 {
		return nil
	}
	return h.commands[len(h.commands)-1]
}

// drydock exec JOB -- CMD runs the words after -- as one command line,
// prints its output (escaped for the terminal) and exits with its status.
func TestExecRunsACommandAndExitsWithItsStatus(t *testing.T) {
	t.Parallel()
	h := newHeldServer(t)

	h.result = client.CommandResult{ExitCode: 0, Output: "a.py\nb.py\n"}
	r := h.run(t)
	if err := r.exec("exec", heldJob, "--timeout", "90s", "--", "ls", "-la", "*.py"); err != nil {
		t.Fatal(err)
	}
	if got := h.lastCommand(); got["command"] != "ls -la *.py" || got["timeout"] != "1m30s" {
		t.Errorf("sent %v; want the words joined and the timeout", got)
	}
	if r.out.String() != "a.py\nb.py\n" {
		t.Errorf("stdout %q", r.out.String())
	}

	// Without --, the words after the job are the command all the same.
	r = h.run(t)
	if err := r.exec("exec", heldJob, "echo", "hi"); err != nil {
		t.Fatal(err)
	}
	if got := h.lastCommand(); got["command"] != "echo hi" || got["timeout"] != nil {
		t.Errorf("sent %v; want echo hi and the server's timeout", got)
	}

	// A failing command: its output, then its status as drydock's.
	h.result = client.CommandResult{ExitCode: 3, Output: "boom\x1b]0;pwned\x07\n"}
	r = h.run(t)
	err := r.exec("exec", heldJob, "--", "false")
	var st exitStatus
	if !errors.As(err, &st) || st != 3 {
		t.Errorf("error %v; want exit status 3", err)
	}
	if out := r.out.String(); strings.ContainsRune(out, 0x1b) || !strings.HasPrefix(out, "boom") {
		t.Errorf("stdout %q: the sandbox's escape sequence reached the terminal", out)
	}

	// Timed out and cut: status 124, and stderr says where the rest is.
	h.result = client.CommandResult{ExitCode: -1, TimedOut: true, Truncated: true, OutputBytes: 90000, OutputPath: ".drydock/out/1.txt", Output: "head...tail"}
	r = h.run(t)
	if err := r.exec("exec", heldJob, "--", "sleep", "999"); !errors.As(err, &st) || st != exitTimedOut {
		t.Errorf("error %v; want exit status %d", err, exitTimedOut)
	}
	mustContain(t, "stderr", r.err.String(), "90000 bytes in all", ".drydock/out/1.txt", "timed out")

	// --json prints the result and succeeds whatever the command's status.
	h.result = client.CommandResult{ExitCode: 3, Output: "x\n"}
	r = h.run(t)
	if err := r.exec("exec", heldJob, "--json", "--", "false"); err != nil {
		t.Fatalf("--json: %v", err)
	}
	mustContain(t, "--json output", r.out.String(), `"exit_code":3`, `"job_id":"`+heldJob+`"`)
}

// Bad input is refused before any request, with the fix named; the
// server's refusals come back explained.
func TestExecAndPutRefuseBadInput(t *testing.T) {
	t.Parallel()
	h := newHeldServer(t)
	dir := t.TempDir()
	binary := filepath.Join(dir, "a.bin")
	if err := os.WriteFile(binary, []byte{0xff, 0xfe, 0}, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", heldJob, "--", "  "}, "no command"},
		{[]string{"exec", heldJob, "--timeout", "1h", "--", "ls"}, "at most 30m"},
		{[]string{"put", heldJob, "bin/a.bin", binary}, "not UTF-8 text"},
		{[]string{"put", heldJob, "x.txt", filepath.Join(dir, "missing")}, "no such file"},
	} {
		err := h.run(t).exec(tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v; want one saying %q", tt.args, err, tt.want)
		}
	}
	h.mu.Lock()
	sent, wrote := len(h.commands), len(h.writes)
	h.mu.Unlock()
	if sent != 0 || wrote != 0 {
		t.Errorf("refused input was sent: %d commands, %d writes", sent, wrote)
	}
	other := "01a2b3c4-0000-7000-8000-0000000000ff"
	if err := h.run(t).exec("exec", other, "--", "ls"); err == nil || !strings.Contains(err.Error(), "job "+other+" not found") {
		t.Errorf("unknown job: %v", err)
	}
}

// drydock put JOB PATH [FILE] sends a local file, or standard input, as the
// file's text.
func TestPutWritesAFileFromAFileOrStandardInput(t *testing.T) {
	t.Parallel()
	h := newHeldServer(t)
	src := filepath.Join(t.TempDir(), "main.py")
	if err := os.WriteFile(src, []byte("print('café')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.run(t)
	if err := r.exec("put", heldJob, "app/main.py", src); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "stdout", r.out.String(), "Wrote app/main.py (15 bytes) in job "+heldJob)

	r = h.run(t)
	r.stdin = "KEY=value\n"
	if err := r.exec("put", heldJob, "conf/.env", "--json"); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "--json output", r.out.String(), `"path":"conf/.env"`, `"size":10`)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.writes["app/main.py"] != "print('café')\n" || h.writes["conf/.env"] != "KEY=value\n" {
		t.Errorf("the server got %q", h.writes)
	}
}

// schedule --agent none --wait waits until the sandbox is ready (the
// runner's sandbox_held event), not for the end of the hold, and says so
// when the job ends before that.
func TestScheduleAgentNoneWaitsUntilTheSandboxIsReady(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	r := newRun()
	done := make(chan error, 1)
	go func() { done <- r.exec("schedule", "--agent", "none", "--wait") }()
	id := scheduled(t, srv)
	srv.SetStatus(id, drydock.StatusRunning, "")
	if r.out.String() != "" {
		t.Errorf("--wait printed before the sandbox was ready: %q", r.out.String())
	}
	srv.Emit(id, drydock.EventLog, map[string]any{"level": "info", "kind": "sandbox_held"})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r.out.String() != id+"\n" {
		t.Errorf("stdout %q; want the job id", r.out.String())
	}
	mustContain(t, "stderr", r.err.String(), "The sandbox is ready", "drydock exec "+id+" -- COMMAND")
	if st := srv.Job(id).Status; st != drydock.StatusRunning {
		t.Errorf("the job is %s; waiting must leave it held", st)
	}

	srv, newRun = setupFake(t)
	r = newRun()
	go func() { done <- r.exec("schedule", "--agent", "none", "--wait") }()
	id = scheduled(t, srv)
	srv.SetStatus(id, drydock.StatusError, "no such image")
	if err := <-done; err == nil || !strings.Contains(err.Error(), "ended error before its sandbox was ready: no such image") {
		t.Errorf("a job that failed before it was ready: %v", err)
	}
}
