package e2e_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// The Podman service whose default runtime is gVisor's runsc
// (scripts/testenv/podman-up.sh starts it): Podman's Docker-compatible API
// takes no runtime per container, so this is how Podman sandboxes get
// gVisor. The real binary with --isolation auto finds gVisor there, says
// so on /readyz and in the job's record, and runs jobs whose sandboxes'
// kernel is gVisor's.
func TestPodmanJobRunsUnderGVisor(t *testing.T) {
	t.Parallel()
	host := os.Getenv("DRYDOCK_TEST_PODMAN_GVISOR_HOST")
	if host == "" {
		t.Skip("DRYDOCK_TEST_PODMAN_GVISOR_HOST not set: no Podman service under gVisor (scripts/testenv/podman-up.sh starts one when it can build runsc)")
	}
	image := os.Getenv("DRYDOCK_TEST_IMAGE_HEADLESS")
	if image == "" {
		image = "drydock-sandbox:headless"
	}
	node := "e2e-podman-gvisor-" + drydock.RandomHex(3)
	s := newServer(t, "--node-id", node)
	t.Cleanup(func() { destroyByServer(t, host, node) })
	for i, a := range s.args {
		if a == "local" && s.args[i-1] == "--runtime" {
			s.args[i] = "docker"
		}
	}
	s.args = append(s.args, "--docker-host", host, "--image-headless", image, "--isolation", "auto")
	s.start()

	code, body := s.do("GET", "/readyz", "", "")
	var ready struct {
		Isolation        string `json:"isolation"`
		IsolationWarning string `json:"isolation_warning"`
	}
	if err := json.Unmarshal(body, &ready); code != 200 || err != nil || ready.Isolation != drydock.IsolationGVisor || ready.IsolationWarning != "" {
		t.Fatalf("/readyz: %d %s; want isolation gvisor and no warning", code, body)
	}

	// A job that finishes: real tool calls in its sandbox, under gVisor.
	done := s.schedule(`{"task": "notes [fake:steps=2] [fake:delay=10ms]"}`)
	if j, _ := s.waitTerminal(done, 3*time.Minute); j.Status != drydock.StatusComplete || j.Steps < 2 || j.Isolation != drydock.IsolationGVisor {
		t.Fatalf("job %s: %s steps=%d isolation %q err=%q\n%s", done, j.Status, j.Steps, j.Isolation, j.Error, s.logs)
	}

	// A running job's sandbox runs gVisor's kernel: Podman did not fall
	// back to runc for it.
	running := s.schedule(`{"task": "notes [fake:steps=1] [fake:delay=10ms] [fake:hang]"}`)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		j := s.status(running)
		if j.Steps >= 1 {
			break
		}
		if j.Status.Terminal() || time.Now().After(deadline) {
			t.Fatalf("job %s: %s steps=%d err=%q", running, j.Status, j.Steps, j.Error)
		}
	}
	requireGVisorKernelThenCancel(t, s, host, running)
}
