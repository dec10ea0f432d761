package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// kill -9 of the server during 200 concurrent schedules loses none of the
// acknowledged jobs after restart, and every one of them then runs.
func TestKill9DuringConcurrentSchedulesLosesNothing(t *testing.T) {
	t.Parallel()
	s := newServer(t, "--max-concurrent", "4")
	s.start()

	var (
		mu    sync.Mutex
		acked []string
		sent  atomic.Int64
		wg    sync.WaitGroup
	)
	client := &http.Client{Timeout: 10 * time.Second}
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent.Add(1)
			resp, err := client.Post(s.url()+"/schedule", "application/json",
				strings.NewReader(fmt.Sprintf(`{"task": "job %d [fake:steps=1] [fake:delay=0s]"}`, i)))
			if err != nil {
				return // the server died under this request: not acknowledged
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				return
			}
			var r struct {
				JobID string `json:"job_id"`
			}
			if json.NewDecoder(resp.Body).Decode(&r) == nil && r.JobID != "" {
				mu.Lock()
				acked = append(acked, r.JobID)
				mu.Unlock()
			}
		}()
	}
	// Kill once some but (very likely) not all requests are acknowledged.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 40 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	s.kill()
	wg.Wait()
	mu.Lock()
	ids := append([]string(nil), acked...)
	mu.Unlock()
	t.Logf("acknowledged %d of %d schedules before kill -9", len(ids), sent.Load())
	if len(ids) == 0 {
		t.Fatal("no schedule was acknowledged before the kill")
	}

	s.start()
	for _, id := range ids {
		if j := s.status(id); j.Task == "" {
			t.Errorf("job %s lost its task", id)
		}
	}
	// Recovered or pending, every acknowledged job reaches a terminal state.
	for _, id := range ids {
		j, _ := s.waitTerminal(id, 60*time.Second)
		if j.Status != drydock.StatusComplete {
			t.Errorf("job %s ended %s: %s", id, j.Status, j.Error)
		}
	}
}

// A job running when the server is killed resumes on restart in the same
// sandbox, continuing from its event log rather than starting over.
func TestRunningJobResumesAfterKill9(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.start()
	id := s.schedule(`{"task": "x [fake:steps=6] [fake:delay=300ms]"}`)
	deadline := time.Now().Add(20 * time.Second)
	for s.status(id).Steps < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	s.kill()
	s.start()
	j, _ := s.waitTerminal(id, 30*time.Second)
	if j.Status != drydock.StatusComplete || j.Steps != 6 {
		t.Fatalf("resumed job: %s steps=%d err=%q\n%s", j.Status, j.Steps, j.Error, s.logs)
	}
	calls := 0
	resumed := false
	for _, e := range s.events(id) {
		if e.Type == drydock.EventToolCall {
			calls++
		}
		if e.Type == drydock.EventLog && strings.Contains(string(e.Data), "resuming") {
			resumed = true
		}
	}
	if !resumed {
		t.Error("no 'resuming' event after restart")
	}
	// A step interrupted by the kill may run twice, never the whole job.
	if calls < 6 || calls > 7 {
		t.Errorf("%d tool calls for 6 steps", calls)
	}
	names := tarGzNames(t, func() []byte { _, b := s.do("GET", "/v1/jobs/"+id+"/artifact.tar.gz", "", ""); return b }())
	if len(names) != 7 {
		t.Errorf("archive holds %v", names)
	}
}

// SIGTERM lets the server stop cleanly and leaves running jobs for the next
// start, which finishes them.
func TestGracefulShutdownLeavesJobsRecoverable(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.start()
	id := s.schedule(`{"task": "x [fake:steps=4] [fake:delay=400ms]"}`)
	deadline := time.Now().Add(20 * time.Second)
	for s.status(id).Steps < 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	s.stop()
	if !strings.Contains(s.logs.String(), "job left running for recovery") {
		t.Errorf("shutdown did not leave the job for recovery:\n%s", s.logs)
	}
	s.start()
	if j, _ := s.waitTerminal(id, 30*time.Second); j.Status != drydock.StatusComplete || j.Steps != 4 {
		t.Fatalf("after graceful restart: %s steps=%d %q", j.Status, j.Steps, j.Error)
	}
}

func TestRefusesPublicListenWithoutTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := exec.Command(binary, "server", "--listen", "0.0.0.0:0", "--data-dir", dir, "--runtime", "local", "--agent", "fake").CombinedOutput()
	if err == nil {
		t.Fatalf("server started on 0.0.0.0 without tokens:\n%s", out)
	}
	if !strings.Contains(string(out), "drydock token create") {
		t.Errorf("refusal does not name the fix:\n%s", out)
	}
}

func TestTokensRequiredOnceCreated(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	out, err := exec.Command(binary, "token", "create", "--data-dir", s.dataDir, "--name", "ci").Output()
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(out))
	if !strings.HasPrefix(token, drydock.TokenPrefix) {
		t.Fatalf("token create printed %q", out)
	}
	s.start()
	if code, _ := s.do("POST", "/schedule", "", `{"task": "x"}`); code != 401 {
		t.Errorf("no token: %d", code)
	}
	if code, b := s.do("POST", "/schedule", token, `{"task": "x [fake:steps=0]"}`); code != 201 {
		t.Errorf("with token: %d %s", code, b)
	}
	files, _ := filepath.Glob(filepath.Join(s.dataDir, "drydock.db*"))
	for _, f := range files {
		if b, _ := os.ReadFile(f); bytes.Contains(b, []byte(token)) {
			t.Errorf("the token secret is stored in plain text in %s", f)
		}
	}
}
