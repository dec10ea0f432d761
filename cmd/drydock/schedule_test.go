package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client/clienttest"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestScheduleSendsEveryFlag(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	r := newRun()
	err := r.exec("schedule", "build it", "--model", "m1", "--max-steps", "7", "--timeout", "15m", "--profile", "desktop",
		"--context-budget", "32000", "--meta", "team=docs", "--meta", "ticket=A;B=C", "--egress", "pypi.example.com:443", "--egress", "*.github.com:443")
	if err != nil {
		t.Fatal(err)
	}
	// Only the id on standard output, for id=$(drydock schedule ...).
	id := strings.TrimSpace(r.out.String())
	j := srv.Job(id)
	if j == nil || r.out.String() != id+"\n" {
		t.Fatalf("stdout %q is not the id of a job", r.out.String())
	}
	want := drydock.JobSpec{Task: "build it", Model: "m1", MaxSteps: 7, Timeout: drydock.Duration(15 * time.Minute),
		Profile: drydock.ProfileDesktop, ContextBudget: 32000, Metadata: map[string]string{"team": "docs", "ticket": "A;B=C"},
		Egress: []string{"pypi.example.com:443", "*.github.com:443"}}
	if diff := cmp.Diff(want, j.JobSpec); diff != "" {
		t.Errorf("spec (-want +server):\n%s", diff)
	}
	mustContain(t, "stderr", r.err.String(), "Status: "+srv.URL+"/status/"+id, "drydock logs "+id+" -f")
}

// Without --egress the job gets the server's default (no list is sent);
// --no-egress sends [], which asks for nothing whatever the default.
func TestScheduleNoEgressSendsAnEmptyList(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	for _, tt := range []struct {
		args  []string
		empty bool
	}{{nil, false}, {[]string{"--no-egress"}, true}} {
		r := newRun()
		if err := r.exec(append([]string{"schedule", "x"}, tt.args...)...); err != nil {
			t.Fatal(err)
		}
		j := srv.Job(strings.TrimSpace(r.out.String()))
		if got := j.Egress != nil && len(j.Egress) == 0; got != tt.empty {
			t.Errorf("schedule %v sent egress %#v; want an empty list: %v", tt.args, j.Egress, tt.empty)
		}
	}
	r := newRun()
	if err := r.exec("schedule", "x", "--no-egress", "--egress", "registry.example.com"); err == nil || !strings.Contains(err.Error(), "can't be used together") {
		t.Errorf("--no-egress with --egress: %v", err)
	}
}

func TestScheduleReadsTheTaskFromStdinAndPrintsJSON(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	r := newRun()
	r.stdin = "  Fix the flaky test.\nIt is in pkg/x.\n"
	if err := r.exec("schedule", "-", "--json"); err != nil {
		t.Fatal(err)
	}
	var j drydock.Job
	if err := json.Unmarshal([]byte(r.out.String()), &j); err != nil {
		t.Fatalf("stdout is not a job: %v\n%s", err, r.out.String())
	}
	if got := srv.Job(j.ID); got == nil || got.Task != "Fix the flaky test.\nIt is in pkg/x." || j.Status != drydock.StatusPending {
		t.Errorf("job = %+v, server has %+v", j, got)
	}
	if r.err.String() != "" {
		t.Errorf("stderr with --json: %q", r.err.String())
	}
}

func TestScheduleRejectsABadSpecWithoutCallingTheServer(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"schedule", "   "}, "task is required and must not be blank"},
		{[]string{"schedule", "x", "--context-budget", "100"}, "context_budget must be between 4000 and 1000000 tokens (or omitted for the model's default)"},
		{[]string{"schedule", "x", "--egress", "host:99999"}, `egress destination "host:99999": the port must be a number from 1 to 65535`},
	} {
		srv, newRun := setupFake(t)
		r := newRun()
		err := r.exec(tt.args...)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%v: error = %v", tt.args, err)
		}
		if n := len(srv.Jobs()); n != 0 {
			t.Errorf("%v: %d jobs created", tt.args, n)
		}
	}
}

// drive plays a job's run on the fake server once the CLI has scheduled it.
func drive(t *testing.T, srv *clienttest.Server, r *cliRun, end drydock.JobStatus) string {
	t.Helper()
	id := scheduled(t, srv)
	waitFor(t, &r.out, "pending")
	srv.SetStatus(id, drydock.StatusRunning, "")
	srv.Emit(id, drydock.EventModel, map[string]any{"text": "I will list the files."})
	srv.Emit(id, drydock.EventToolCall, map[string]any{"id": "c1", "name": "bash", "input": map[string]any{"command": "ls -la /workspace"}})
	srv.Emit(id, drydock.EventObservation, map[string]any{"id": "c1", "name": "bash", "output": "a\nb\nc\nd\ne\nf\n"})
	srv.Emit(id, drydock.EventUsage, drydock.Usage{InputTokens: 1000, OutputTokens: 50})
	srv.Emit(id, drydock.EventToolCall, map[string]any{"id": "c2", "name": "str_replace_based_edit_tool",
		"input": map[string]any{"command": "create", "path": "poem.txt", "file_text": "ships\n"}})
	srv.Emit(id, drydock.EventObservation, map[string]any{"id": "c2", "name": "str_replace_based_edit_tool", "output": "Error: disk full", "is_error": true})
	srv.SetProgress(id, 2, drydock.Usage{InputTokens: 1000, OutputTokens: 50, CostUSD: 0.25}, "Wrote poem.txt")
	srv.SetArtifact(id, "tar.gz", []byte("archive"))
	srv.Emit(id, drydock.EventArtifact, map[string]any{"size": 3 << 20, "format": "tar.gz"})
	srv.Emit(id, drydock.EventSummary, map[string]any{"summary": "Wrote poem.txt"})
	msg := ""
	if end == drydock.StatusError {
		msg = "the model gave up"
	}
	srv.SetStatus(id, end, msg)
	return id
}

// scheduled waits for the one job of the test's server to appear.
func scheduled(t *testing.T, srv *clienttest.Server) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if js := srv.Jobs(); len(js) == 1 {
			return js[0].ID
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no job was scheduled")
	return ""
}

func TestScheduleFollow(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	r := newRun()
	done := make(chan error, 1)
	go func() { done <- r.exec("schedule", "write a poem", "--follow") }()
	id := drive(t, srv, r, drydock.StatusComplete)
	if err := <-done; err != nil {
		t.Fatalf("schedule --follow: %v\n%s", err, r.out.String())
	}
	out := r.out.String()
	mustContain(t, "output", out,
		"Scheduled job "+id+"  ("+srv.URL+"/status/"+id+")",
		"status   pending", "status   running",
		"think    I will list the files.",
		"tool     bash $ ls -la /workspace",
		"output   a\n", "d\n", "… 2 more lines",
		"tool     str_replace_based_edit_tool create poem.txt",
		"failed   Error: disk full",
		"archive  workspace archived (3.0 MiB, tar.gz)",
		"summary  Wrote poem.txt",
		"status   complete",
		"\nJob "+id+" complete", " · 2 steps · 1,050 tokens · $0.25\n",
		"Summary:  Wrote poem.txt",
		"Download: drydock download "+id+"  ("+srv.URL+"/v1/jobs/"+id+"/artifact.tar.gz)",
	)
	if strings.Contains(out, "\x1b[") {
		t.Errorf("colour codes written to a non-terminal")
	}
	if strings.Contains(out, "  e\n") {
		t.Errorf("observation not cut to its first lines:\n%s", out)
	}
}

func TestScheduleFollowFailsWhenTheJobFails(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	r := newRun()
	r.color = true
	done := make(chan error, 1)
	go func() { done <- r.exec("schedule", "write a poem", "-f") }()
	id := drive(t, srv, r, drydock.StatusError)
	err := <-done
	if err == nil || err.Error() != "job "+id+" failed" {
		t.Errorf("error = %v, want job %s failed", err, id)
	}
	mustContain(t, "output", r.out.String(),
		"\x1b[31mError: disk full\x1b[0m",
		"Error:    \x1b[31mthe model gave up\x1b[0m",
		"\x1b[31;1merror\x1b[0m")
}

func TestScheduleFollowJSON(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	r := newRun()
	done := make(chan error, 1)
	go func() { done <- r.exec("schedule", "write a poem", "--follow", "--json") }()
	id := scheduled(t, srv)
	srv.SetStatus(id, drydock.StatusRunning, "")
	srv.SetStatus(id, drydock.StatusCancelled, "")
	if err := <-done; err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("error = %v, want cancelled", err)
	}
	sc := bufio.NewScanner(strings.NewReader(r.out.String()))
	var lines []map[string]any
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	var got []string
	for _, m := range lines {
		if seq, ok := m["seq"]; ok {
			got = append(got, "event "+m["type"].(string)+" "+jsonString(seq))
		} else {
			got = append(got, "job "+m["status"].(string))
		}
	}
	want := []string{"job pending", "event status 1", "event status 2", "event status 3", "job cancelled"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON lines (-want +got):\n%s", diff)
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestCtrlCStopsFollowingButNotTheJob(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	r := newRun()
	ctrlC, press := context.WithCancel(t.Context())
	r.interrupt = ctrlC
	done := make(chan error, 1)
	go func() { done <- r.exec("schedule", "long task", "--follow") }()
	waitFor(t, &r.out, "status   pending")
	id := scheduled(t, srv)
	srv.SetStatus(id, drydock.StatusRunning, "")
	waitFor(t, &r.out, "status   running")
	press()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after Ctrl-C: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Ctrl-C did not stop following")
	}
	mustContain(t, "stderr", r.err.String(), "Stopped following; job "+id+" keeps running", "drydock logs "+id+" -f --after 2")
	if st := srv.Job(id).Status; st != drydock.StatusRunning {
		t.Errorf("job is %s after Ctrl-C; following must not cancel it", st)
	}
}

func TestScheduleWait(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	r := newRun()
	done := make(chan error, 1)
	go func() { done <- r.exec("schedule", "quick", "--wait", "--json") }()
	id := scheduled(t, srv)
	srv.SetStatus(id, drydock.StatusRunning, "")
	if r.out.String() != "" {
		t.Errorf("--wait printed before the end: %q", r.out.String())
	}
	srv.SetStatus(id, drydock.StatusComplete, "")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var j drydock.Job
	if err := json.Unmarshal([]byte(r.out.String()), &j); err != nil || j.ID != id || j.Status != drydock.StatusComplete {
		t.Errorf("--wait --json printed %q (%v), want the complete job", r.out.String(), err)
	}
	if diff := cmp.Diff(srv.Job(id), &j, cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("printed job (-server +printed):\n%s", diff)
	}
}

func TestCtrlCStopsWaitingButNotTheJob(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	r := newRun()
	ctrlC, press := context.WithCancel(t.Context())
	r.interrupt = ctrlC
	done := make(chan error, 1)
	go func() { done <- r.exec("schedule", "long task", "--wait") }()
	id := scheduled(t, srv)
	for len(srv.StreamResumes()) == 0 { // waiting has begun
		time.Sleep(5 * time.Millisecond)
	}
	press()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after Ctrl-C: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Ctrl-C did not stop waiting")
	}
	mustContain(t, "stderr", r.err.String(), "Stopped waiting; job "+id+" keeps running", "drydock status "+id)
	if st := srv.Job(id).Status; st != drydock.StatusPending {
		t.Errorf("job is %s after Ctrl-C; waiting must not cancel it", st)
	}
}

func TestScheduleIdempotencyKeyReturnsTheFirstJob(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	var ids []string
	for range 2 {
		r := newRun()
		if err := r.exec("schedule", "build it", "--idempotency-key", "deploy 42's"); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, strings.TrimSpace(r.out.String()))
	}
	if ids[0] == "" || ids[0] != ids[1] || len(srv.Jobs()) != 1 {
		t.Fatalf("two runs with one key printed %q with %d jobs on the server; want one job twice", ids, len(srv.Jobs()))
	}
	if keys := srv.CreateKeys(); len(keys) != 2 || keys[0] != `"deploy 42's"` || keys[1] != keys[0] {
		t.Errorf("Idempotency-Key headers %q; want the key as a Structured Field String, twice", keys)
	}
	r := newRun()
	err := r.exec("schedule", "build something else", "--idempotency-key", "deploy 42's")
	mustContain(t, "error", fmt.Sprint(err), "already used for another request", "deploy 42's")
	if err := newRun().exec("schedule", "x", "--idempotency-key", strings.Repeat("k", 256)); err == nil || !strings.Contains(err.Error(), "--idempotency-key") {
		t.Errorf("a 256-character key: %v; want an error naming the flag", err)
	}
}

// The first answer is lost after the server created the job: the CLI
// retries with the same key and prints that job's id.
func TestScheduleRetriesALostAnswer(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	srv.LoseAnswers(1)
	r := newRun()
	if err := r.exec("schedule", "build it"); err != nil {
		t.Fatal(err)
	}
	js := srv.Jobs()
	if len(js) != 1 || strings.TrimSpace(r.out.String()) != js[0].ID {
		t.Fatalf("printed %q; server has %d jobs; want its one job", r.out.String(), len(js))
	}
	if keys := srv.CreateKeys(); len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Errorf("Idempotency-Key headers %q; want one random key on both requests", keys)
	}
}

// Interrupted while the outcome is unknown: the message names the key and
// the re-run that is safe, and that re-run returns the job.
func TestScheduleInterruptedNamesTheKey(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	srv.LoseAnswers(1000)
	r := newRun()
	ctx, cancel := context.WithCancel(t.Context())
	r.interrupt = ctx
	time.AfterFunc(200*time.Millisecond, cancel)
	err := r.exec("schedule", "build it")
	if err == nil {
		t.Fatal("succeeded; want an error")
	}
	mustContain(t, "error", err.Error(), "interrupted while scheduling", "--idempotency-key ")
	key := strings.Fields(err.Error()[strings.Index(err.Error(), "--idempotency-key ")+len("--idempotency-key "):])[0]
	if strings.Contains(err.Error(), "may exist anyway") || len(srv.Jobs()) != 1 {
		t.Fatalf("error %q with %d jobs on the server", err, len(srv.Jobs()))
	}
	srv.LoseAnswers(0)
	again := newRun()
	if err := again.exec("schedule", "build it", "--idempotency-key", key); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(again.out.String()); got != srv.Jobs()[0].ID || len(srv.Jobs()) != 1 {
		t.Errorf("the re-run with key %s printed %q; want the one job %s", key, got, srv.Jobs()[0].ID)
	}
}
