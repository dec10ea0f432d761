package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// A pause made through one replica holds the agent another replica runs,
// and outlives kill -9 of that replica: the replica that recovers the job
// keeps it paused until it is resumed (through yet another replica).
func TestPauseAcrossReplicasAndFailover(t *testing.T) {
	t.Parallel()
	dsn := freshDatabase(t)
	shared := t.TempDir() // artifacts and local sandboxes, as shared storage would be
	mk := func(extra ...string) *server {
		s := newServer(t, append([]string{"--store", dsn}, extra...)...)
		s.dataDir = shared
		for i, a := range s.args {
			if a == "--data-dir" {
				s.args[i+1] = shared
			}
		}
		s.start()
		return s
	}
	api := mk("--max-concurrent", "0") // serves the API only
	worker := mk("--max-concurrent", "1")

	id := api.schedule(`{"task": "x [fake:steps=12] [fake:delay=150ms]"}`)
	api.waitEvent(id, drydock.EventToolCall, 30*time.Second)
	if code, data := api.do("POST", "/v1/jobs/"+id+"/pause", "", ""); code != 200 {
		t.Fatalf("pause: %d %s", code, data)
	}
	// The second runner starts only now, so the job is on the first.
	standby := mk("--max-concurrent", "1")
	time.Sleep(2 * time.Second) // a step in flight at the pause ends
	before := countEvents(api.events(id), drydock.EventToolCall)
	worker.kill()
	// The standby recovers the job after the lease's TTL (3 s) and holds it.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		recovered := false
		for _, e := range api.events(id) {
			if e.Type == drydock.EventLog && strings.Contains(string(e.Data), "resuming on") {
				recovered = true
			}
		}
		if recovered {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the paused job was not recovered after its replica died\n%s", standby.logs)
		}
	}
	time.Sleep(2 * time.Second)
	if after := countEvents(api.events(id), drydock.EventToolCall); after != before {
		t.Fatalf("%d tool calls while the job was paused (before the failover %d)", after, before)
	}
	if j := api.status(id); !j.Paused || j.Status != drydock.StatusRunning {
		t.Fatalf("recovered job: %s paused=%v", j.Status, j.Paused)
	}
	if code, data := standby.do("POST", "/v1/jobs/"+id+"/resume", "", ""); code != 200 {
		t.Fatalf("resume: %d %s", code, data)
	}
	j, _ := api.waitTerminal(id, 60*time.Second)
	if j.Status != drydock.StatusComplete || j.Steps != 12 || j.PausedSeconds <= 0 {
		t.Fatalf("job: %s steps=%d paused_seconds=%v %q", j.Status, j.Steps, j.PausedSeconds, j.Error)
	}
}
