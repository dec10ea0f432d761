package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/docker"
)

// dockerServer prepares a server whose sandboxes run on the engine at host,
// under a node id of its own, and removes whatever it leaves behind at the
// test's end.
func dockerServer(t *testing.T, host string, extra ...string) *server {
	t.Helper()
	image := os.Getenv("DRYDOCK_TEST_IMAGE_HEADLESS")
	if image == "" {
		image = "drydock-sandbox:headless"
	}
	node := fmt.Sprintf("e2e-faults-%d-%d", os.Getpid(), nodeSeq.Add(1))
	s := newServer(t, append([]string{"--node-id", node}, extra...)...)
	t.Cleanup(func() { destroyByServer(t, host, node) })
	for i, a := range s.args {
		if a == "local" && s.args[i-1] == "--runtime" {
			s.args[i] = "docker"
		}
	}
	s.args = append(s.args, "--docker-host", host, "--image-headless", image)
	return s
}

// engineSandboxes lists the sandboxes the engine at host holds for a node,
// straight from the engine.
func engineSandboxes(t *testing.T, host string, labels map[string]string) []*drydock.Sandbox {
	t.Helper()
	rt, err := docker.New(docker.Options{Host: host})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	sbs, err := rt.List(ctx, labels)
	if err != nil {
		t.Fatal(err)
	}
	return sbs
}

// kill -9 of the server while 500 schedules arrive at once and 4 jobs run
// in real Docker sandboxes. After the restart every acknowledged job is
// there with its task, the 4 running jobs resume in their own sandboxes
// (continuing from their event logs) and complete, and once every job has
// ended no sandbox of this server is left on the engine, including one a
// crash left behind for a job the store does not know, which the reaper's
// pass at start removes.
func TestFaultKill9During500SchedulesWith4RunningSandboxes(t *testing.T) {
	t.Parallel()
	host := os.Getenv("DRYDOCK_TEST_DOCKER_HOST")
	if host == "" {
		t.Skip("DRYDOCK_TEST_DOCKER_HOST not set: no Docker engine to run sandboxes on (make test starts one)")
	}
	s := dockerServer(t, host, "--max-concurrent", "4")
	s.start()

	// Four long jobs take every slot, each in a sandbox of its own.
	const steps = 10
	var long []string
	for range 4 {
		long = append(long, s.schedule(fmt.Sprintf(`{"task": "long [fake:steps=%d] [fake:delay=700ms]"}`, steps)))
	}
	for _, id := range long {
		for deadline := time.Now().Add(3 * time.Minute); s.status(id).Steps < 1; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("long job %s did not start: %+v", id, s.status(id))
			}
		}
	}
	before := map[string]string{} // job → sandbox
	for _, sb := range engineSandboxes(t, host, map[string]string{drydock.LabelServer: s.node}) {
		before[sb.Labels[drydock.LabelJob]] = sb.ID
	}
	for _, id := range long {
		if before[id] == "" {
			t.Fatalf("long job %s has no sandbox on the engine: %v", id, before)
		}
	}

	// 500 schedules at once; kill -9 part way through.
	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
	)
	client := &http.Client{Timeout: 30 * time.Second}
	for i := range 500 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Post(s.url()+"/schedule", "application/json",
				strings.NewReader(fmt.Sprintf(`{"task": "burst %d [fake:steps=1] [fake:delay=0s]"}`, i)))
			if err != nil {
				return // the server died under this request: not acknowledged
			}
			defer resp.Body.Close()
			var r struct {
				JobID string `json:"job_id"`
			}
			if resp.StatusCode == http.StatusCreated && json.NewDecoder(resp.Body).Decode(&r) == nil && r.JobID != "" {
				mu.Lock()
				acked = append(acked, r.JobID)
				mu.Unlock()
			}
		}()
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 150 {
			break
		}
	}
	s.kill()
	killed := time.Now()
	wg.Wait()
	burst := append([]string(nil), acked...)
	t.Logf("kill -9 after %d of 500 schedules were acknowledged, with %d jobs running in sandboxes", len(burst), len(long))
	if len(burst) == 0 || len(burst) == 500 {
		t.Fatalf("%d of 500 schedules acknowledged at the kill; the kill must fall during the burst", len(burst))
	}

	// The running jobs' sandboxes survive the server.
	for _, id := range long {
		if sbs := engineSandboxes(t, host, map[string]string{drydock.LabelJob: id}); len(sbs) != 1 {
			t.Errorf("job %s has %d sandboxes after the kill", id, len(sbs))
		}
	}
	// A crash between finishing a job and destroying its sandbox (or a job
	// deleted since) leaves a sandbox whose job the store does not hold.
	rt, err := docker.New(docker.Options{Host: host, ServerID: s.node})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	stray := "01a20000-0000-7000-8000-00000000dead"
	orphan, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: stray, Image: s.args[len(s.args)-1], Profile: drydock.ProfileHeadless,
		Labels: map[string]string{drydock.LabelManaged: "true", drydock.LabelJob: stray, drydock.LabelServer: s.node}})
	if err != nil {
		t.Fatal(err)
	}

	restarted := time.Now()
	s.start()
	t.Logf("the server answered /readyz %s after the restart began (%s after the kill)", time.Since(restarted).Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))

	// Every acknowledged job is there, as it was sent.
	for _, id := range burst {
		j := s.status(id)
		if !strings.HasPrefix(j.Task, "burst ") {
			t.Errorf("job %s: task %q after the restart", id, j.Task)
		}
	}
	// The running jobs resume in their own sandboxes and complete.
	var resumedIn time.Duration
	for _, id := range long {
		j, _ := s.waitTerminal(id, 5*time.Minute)
		if j.Status != drydock.StatusComplete || j.Steps != steps {
			t.Errorf("long job %s: %s steps=%d %q", id, j.Status, j.Steps, j.Error)
		}
		resumed, calls := false, 0
		for _, ev := range s.events(id) {
			if ev.Type == drydock.EventToolCall {
				calls++
			}
			if ev.Type == drydock.EventLog && strings.Contains(string(ev.Data), "resuming on") {
				resumed = true
				resumedIn = max(resumedIn, ev.Time.Sub(restarted))
			}
		}
		if !resumed {
			t.Errorf("long job %s: no 'resuming' event", id)
		}
		// A step cut by the kill may run twice, never the whole job.
		if calls < steps || calls > steps+1 {
			t.Errorf("long job %s: %d tool calls for %d steps", id, calls, steps)
		}
		if !strings.Contains(s.logs.String(), "reattached to sandbox") || !strings.Contains(s.logs.String(), before[id]) {
			t.Errorf("long job %s did not reattach to its sandbox %s", id, before[id])
		}
	}
	t.Logf("all 4 running jobs resumed within %s of the restart", resumedIn.Round(time.Millisecond))

	// The reaper's pass at start removed the stray sandbox.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if len(engineSandboxes(t, host, map[string]string{drydock.LabelJob: stray})) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox %s of an unknown job was not reaped", orphan.ID)
		}
	}

	// Requests cut by the kill may have stored their job without an answer:
	// those jobs exist (the client may find them) and run. The test counts
	// them; it cancels every job of the burst, answered or not, since each
	// would need a sandbox, and waits for every job to end.
	all := s.jobIDs()
	isLong := map[string]bool{}
	for _, id := range long {
		isLong[id] = true
	}
	t.Logf("after the restart the store holds %d jobs: %d running before the kill, %d acknowledged, %d stored but not acknowledged (their requests died with the server)",
		len(all), len(long), len(burst), len(all)-len(long)-len(burst))
	if len(all) < len(long)+len(burst) {
		t.Errorf("the store holds %d jobs, fewer than the %d acknowledged", len(all), len(long)+len(burst))
	}
	for _, id := range all {
		if isLong[id] {
			continue
		}
		if code, b := s.do("POST", "/v1/jobs/"+id+"/cancel", "", ""); code != 200 && code != 202 && code != 409 {
			t.Errorf("cancel %s: %d %s", id, code, b)
		}
	}
	ended := map[drydock.JobStatus]int{}
	for _, id := range all {
		if isLong[id] {
			continue
		}
		j, _ := s.waitTerminal(id, 5*time.Minute)
		ended[j.Status]++
		if j.Status == drydock.StatusError {
			t.Errorf("burst job %s: %s %q", id, j.Status, j.Error)
		}
	}
	t.Logf("burst jobs after the cancel: %v", ended)

	// Nothing of this server is left on the engine.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		left := engineSandboxes(t, host, map[string]string{drydock.LabelServer: s.node})
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, sb := range left {
				t.Errorf("sandbox %s (job %s) left on the engine", sb.ID, sb.Labels[drydock.LabelJob])
			}
			break
		}
	}
}

// jobIDs lists every job the server holds.
func (s *server) jobIDs() []string {
	s.t.Helper()
	var ids []string
	for cursor := ""; ; {
		code, b := s.do("GET", "/v1/jobs?limit=500&cursor="+cursor, "", "")
		if code != 200 {
			s.t.Fatalf("list jobs: %d %s", code, b)
		}
		var page struct {
			Jobs []struct {
				ID string `json:"job_id"`
			} `json:"jobs"`
			NextCursor string `json:"next_cursor"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			s.t.Fatal(err)
		}
		for _, j := range page.Jobs {
			ids = append(ids, j.ID)
		}
		if page.NextCursor == "" {
			return ids
		}
		cursor = page.NextCursor
	}
}
