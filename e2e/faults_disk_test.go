package e2e_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// smallDisk mounts a tmpfs of size bytes for one test and unmounts it at the
// end. It skips when the test cannot mount (not root, no tmpfs).
func smallDisk(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs for the data directory (needs root): %v %s", err, out)
	}
	t.Cleanup(func() {
		// The server is killed by an earlier cleanup (registered later).
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a file in dir until the file system is full and returns its
// path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			break
		}
	}
	// The last blocks, smaller than a chunk.
	for {
		if _, err := f.Write(chunk[:512]); err != nil {
			break
		}
	}
	return path
}

// The disk of the data directory fills up while the server runs and a job is
// under way. Schedules are then refused with 503 and a message naming the
// full disk (never a 201 for a job that is not stored); reads keep working;
// once space is freed the server takes jobs again without a restart, the job
// that was running ends in a terminal state, and every job acknowledged at
// any point is intact and runs.
func TestFaultDataDiskFull(t *testing.T) {
	t.Parallel()
	disk := smallDisk(t, 24<<20)
	s := newServer(t, "--max-concurrent", "2")
	s.dataDir = disk
	for i, a := range s.args {
		if a == "--data-dir" {
			s.args[i+1] = disk
		}
	}
	s.start()

	var acked []string
	for range 5 {
		acked = append(acked, s.schedule(`{"task": "before [fake:steps=2] [fake:delay=10ms]"}`))
	}
	for _, id := range acked {
		if j, _ := s.waitTerminal(id, time.Minute); j.Status != drydock.StatusComplete {
			t.Fatalf("job %s before the fill: %s %q", id, j.Status, j.Error)
		}
	}
	running := s.schedule(`{"task": "during [fake:steps=40] [fake:delay=100ms]"}`)
	acked = append(acked, running)
	for deadline := time.Now().Add(30 * time.Second); s.status(running).Steps < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the long job did not start")
		}
	}

	filler := fill(t, disk)
	filledAt := time.Now()
	// Space the store already holds (WAL pages) may take a few more small
	// writes; big tasks use it up. Every 201 is a promise the test keeps.
	task := strings.Repeat("x", 200<<10)
	refused := 0
	var refusal string
	for i := 0; i < 200 && refused < 3; i++ {
		code, b := s.do("POST", "/schedule", "", fmt.Sprintf(`{"task": "full %d [fake:steps=1] [fake:delay=0s] %s"}`, i, task))
		switch code {
		case 201:
			var r struct {
				JobID string `json:"job_id"`
			}
			json.Unmarshal(b, &r)
			acked = append(acked, r.JobID)
		case 503, 507:
			refused++
			refusal = string(b)
		default:
			t.Fatalf("schedule on a full disk: %d %s; want 201, or 503/507 saying the disk is full", code, b)
		}
	}
	if refused == 0 {
		t.Fatal("no schedule was refused on a full disk")
	}
	if !strings.Contains(refusal, "disk") || !strings.Contains(refusal, "full") {
		t.Errorf("the refusal does not say the disk is full: %s", refusal)
	}
	t.Logf("full disk: %d big schedules acknowledged, then refused with: %s", len(acked)-6, strings.TrimSpace(refusal))

	// Small writes may still fit in pages the database file holds; keep the
	// disk full a while so that the running job's writes meet it too.
	small := 0
	for range 20 {
		code, b := s.do("POST", "/schedule", "", `{"task": "small [fake:steps=1] [fake:delay=0s]"}`)
		switch code {
		case 201:
			var r struct {
				JobID string `json:"job_id"`
			}
			json.Unmarshal(b, &r)
			acked = append(acked, r.JobID)
			small++
		case 503, 507:
		default:
			t.Fatalf("small schedule on a full disk: %d %s", code, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("full disk: %d of 20 small schedules still fitted (and are kept)", small)

	// Reads work on a full disk.
	for _, id := range acked {
		if j := s.status(id); j.Task == "" {
			t.Errorf("job %s has no task on a full disk", id)
		}
	}
	if code, b := s.do("GET", "/v1/jobs?limit=100", "", ""); code != 200 {
		t.Errorf("list on a full disk: %d %s", code, b)
	}
	if code, b := s.do("GET", "/readyz", "", ""); code != 200 {
		t.Logf("readyz on a full disk: %d %s", code, b)
	}

	// Free the space: the same process takes jobs again.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	var back time.Duration
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, b := s.do("POST", "/schedule", "", `{"task": "after [fake:steps=1] [fake:delay=0s]"}`)
		if code == 201 {
			back = time.Since(freed)
			var r struct {
				JobID string `json:"job_id"`
			}
			json.Unmarshal(b, &r)
			acked = append(acked, r.JobID)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("schedules still refused 30s after space was freed: %d %s", code, b)
		}
	}
	t.Logf("disk full for %s; schedules accepted again %s after space was freed", freed.Sub(filledAt).Round(time.Millisecond), back.Round(time.Millisecond))

	for _, id := range acked {
		j, _ := s.waitTerminal(id, 2*time.Minute)
		switch {
		case id == running:
			// The job whose writes failed while the disk was full ends
			// either way, with a reason when it fails.
			if j.Status == drydock.StatusError && j.Error == "" || j.Status == drydock.StatusCancelled {
				t.Errorf("the job running at the fill ended %s %q", j.Status, j.Error)
			}
			obs := 0
			for _, ev := range s.events(id) {
				if ev.Type == drydock.EventObservation {
					obs++
				}
			}
			t.Logf("the job running while the disk filled ended %s after %d steps %q; its log holds %d of their observations", j.Status, j.Steps, j.Error, obs)

		case j.Status != drydock.StatusComplete:
			t.Errorf("job %s: %s %q", id, j.Status, j.Error)
		}
	}
}
