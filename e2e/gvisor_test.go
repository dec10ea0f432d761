package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
)

// engineHasRunsc reports whether the Docker engine at host has gVisor's
// runsc registered (scripts/testenv/docker-up.sh registers it).
func engineHasRunsc(t *testing.T, host string) bool {
	t.Helper()
	cli, err := client.New(client.WithHost(host))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	info, err := cli.Info(t.Context(), client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, ok := info.Info.Runtimes["runsc"]
	return ok
}

// A job's sandbox runs under gVisor on each engine that offers it: Docker
// with runsc registered (--isolation gvisor) and a Podman service whose
// default runtime is runsc (--isolation auto must find it). The server's
// /readyz, the job's isolation field and its log say so, and the sandbox's
// kernel is gVisor's (its syslog is gVisor's boot log).
func TestJobRunsUnderGVisor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, env, mode string }{
		{"docker", "DRYDOCK_TEST_DOCKER_HOST", "gvisor"},
		{"podman-gvisor", "DRYDOCK_TEST_PODMAN_GVISOR_HOST", "auto"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			host := os.Getenv(c.env)
			if host == "" {
				t.Skipf("%s not set: no %s engine with gVisor (make test starts one)", c.env, c.name)
			}
			if c.name == "docker" && !engineHasRunsc(t, host) {
				t.Skip("the test dockerd has no runsc runtime (scripts/testenv/docker-up.sh registers one)")
			}
			jobUnderGVisor(t, host, c.mode)
		})
	}
}

func jobUnderGVisor(t *testing.T, host, mode string) {
	image := os.Getenv("DRYDOCK_TEST_IMAGE_HEADLESS")
	if image == "" {
		image = "drydock-sandbox:headless"
	}
	node := "e2e-gvisor-" + drydock.RandomHex(3)
	s := newServer(t, "--node-id", node)
	t.Cleanup(func() { destroyByServer(t, host, node) })
	for i, a := range s.args {
		if a == "local" && s.args[i-1] == "--runtime" {
			s.args[i] = "docker"
		}
	}
	s.args = append(s.args, "--docker-host", host, "--image-headless", image, "--isolation", mode)
	s.start()
	if code, body := s.do("GET", "/readyz", "", ""); code != 200 || !strings.Contains(string(body), `"isolation":"gvisor"`) {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	id := s.schedule(`{"task": "notes [fake:steps=1] [fake:delay=10ms] [fake:hang]"}`)
	var j *drydock.Job
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if j = s.status(id); j.Steps >= 1 || j.Status.Terminal() || time.Now().After(deadline) {
			break
		}
	}
	if j.Isolation != drydock.IsolationGVisor {
		t.Fatalf("job %s (%s %q) shows isolation %q; want gvisor", id, j.Status, j.Error, j.Isolation)
	}
	var said bool
	for _, ev := range s.events(id) {
		var d struct {
			Kind, Isolation string
		}
		json.Unmarshal(ev.Data, &d)
		said = said || (ev.Type == drydock.EventLog && d.Kind == "sandbox" && d.Isolation == drydock.IsolationGVisor)
	}
	if !said {
		t.Error("the job's log does not say its sandbox runs under gVisor")
	}
	requireGVisorKernelThenCancel(t, s, host, id)
}

// requireGVisorKernelThenCancel checks that the running job id's container
// on the engine at host runs gVisor's kernel (the engine did not fall back
// to runc for it), then cancels the job, which must end cancelled and
// recorded as run under gVisor.
func requireGVisorKernelThenCancel(t *testing.T, s *server, host, id string) {
	t.Helper()
	out, err := exec.Command("docker", "-H", host, "ps", "-q", "--filter", "label="+drydock.LabelJob+"="+id).Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("the job's container: %v %q", err, out)
	}
	kernel, err := exec.Command("docker", "-H", host, "exec", strings.TrimSpace(string(out)), "cat", "/proc/version").CombinedOutput()
	if err != nil || !strings.Contains(string(kernel), "gvisor") {
		t.Errorf("the sandbox's kernel is not gVisor's: %v\n%s", err, kernel)
	}
	if code, body := s.do("POST", "/v1/jobs/"+id+"/cancel", "", ""); code != 202 {
		t.Fatalf("cancel: %d %s", code, body)
	}
	if j, _ := s.waitTerminal(id, 2*time.Minute); j.Status != drydock.StatusCancelled || j.Isolation != drydock.IsolationGVisor {
		t.Errorf("job %s ended %s with isolation %q", id, j.Status, j.Isolation)
	}
}

// --isolation gvisor on an engine that cannot give gVisor (Podman's
// service runs runc here) stops the server at start, saying how to get
// it; auto starts it under runc and /readyz says why.
func TestIsolationGVisorWithoutIt(t *testing.T) {
	t.Parallel()
	host := os.Getenv("DRYDOCK_TEST_PODMAN_HOST")
	if host == "" {
		t.Skip("DRYDOCK_TEST_PODMAN_HOST not set: no Podman service (make test starts one)")
	}
	image := os.Getenv("DRYDOCK_TEST_IMAGE_HEADLESS")
	if image == "" {
		image = "drydock-sandbox:headless"
	}
	args := func(mode string) []string {
		return []string{"server", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--runtime", "docker", "--docker-host", host,
			"--image-headless", image, "--agent", "fake", "--isolation", mode}
	}
	// A server that started anyway would not return: bounded.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args("gvisor")...)
	cmd.Env = append(os.Environ(), "DRYDOCK_TOKEN=", "DRYDOCK_URL=")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--isolation gvisor") || !strings.Contains(string(out), "containers.conf") {
		t.Fatalf("server with --isolation gvisor on Podman without gVisor: %v\n%s", err, out)
	}

	s := newServer(t, "--isolation", "auto")
	for i, a := range s.args {
		if a == "local" && s.args[i-1] == "--runtime" {
			s.args[i] = "docker"
		}
	}
	s.args = append(s.args, "--docker-host", host, "--image-headless", image)
	s.start()
	if code, body := s.do("GET", "/readyz", "", ""); code != 200 || !strings.Contains(string(body), `"isolation":"runc"`) || !strings.Contains(string(body), "isolation_warning") {
		t.Fatalf("/readyz under auto without gVisor: %d %s", code, body)
	}
}
