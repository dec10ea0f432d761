package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/docker"
)

// engineRuntime is a client of the engine at host for the test to look at
// or reach into sandboxes with, closed when the test ends.
func engineRuntime(t *testing.T, host string) *docker.Runtime {
	t.Helper()
	rt, err := docker.New(docker.Options{Host: host})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// jupyterLink asks for a job's Jupyter link until its sandbox exists.
func jupyterLink(t *testing.T, s *server, id, token string) string {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		code, body := s.do("POST", "/v1/jobs/"+id+"/jupyter/link", token, "")
		if code == 200 {
			var link struct{ URL string }
			if err := json.Unmarshal(body, &link); err != nil || link.URL == "" {
				t.Fatalf("Jupyter link: %v %s", err, body)
			}
			return link.URL
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Jupyter link: %d %s\n%s", code, body, s.logs)
		}
	}
}

// destroyByServer removes every sandbox a test's server created.
func destroyByServer(t *testing.T, host, node string) {
	rt, err := docker.New(docker.Options{Host: host})
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sbs, err := rt.List(ctx, map[string]string{drydock.LabelServer: node})
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	for _, sb := range sbs {
		if err := rt.Destroy(ctx, sb.ID); err != nil {
			t.Logf("cleanup: destroy %s: %v", sb.ID, err)
		}
	}
}

// engines lists the container engines the test setup started (make test
// starts both); each case skips with the reason when its engine is absent.
func engines() []struct{ name, env string } {
	return []struct{ name, env string }{
		{"docker", "DRYDOCK_TEST_DOCKER_HOST"},
		{"podman", "DRYDOCK_TEST_PODMAN_HOST"},
	}
}

// A job runs end to end in a real sandbox on Docker and on Podman: created,
// worked in through toolboxd, archived, destroyed with nothing left behind.
func TestJobInRealSandbox(t *testing.T) {
	t.Parallel()
	for _, e := range engines() {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			host := os.Getenv(e.env)
			if host == "" {
				t.Skipf("%s not set: no %s engine to run sandboxes on (make test starts one)", e.env, e.name)
			}
			image := os.Getenv("DRYDOCK_TEST_IMAGE_HEADLESS")
			if image == "" {
				image = "drydock-sandbox:headless"
			}
			node := "e2e-" + e.name + "-" + strings.ReplaceAll(t.Name(), "/", "-")
			s := newServer(t, "--node-id", node)
			// Whatever happens to the server, leave no sandbox behind.
			t.Cleanup(func() { destroyByServer(t, host, node) })
			for i, a := range s.args {
				if a == "local" && s.args[i-1] == "--runtime" {
					s.args[i] = "docker"
				}
			}
			s.args = append(s.args, "--docker-host", host, "--image-headless", image)
			s.start()
			id := s.schedule(`{"task": "in a real sandbox [fake:steps=2] [fake:delay=10ms]"}`)
			j, seen := s.waitTerminal(id, 2*time.Minute)
			if j.Status != drydock.StatusComplete {
				t.Fatalf("job ended %s (%v): %s\n%s", j.Status, seen, j.Error, s.logs)
			}
			_, data := s.do("GET", "/v1/jobs/"+id+"/artifact.tar.gz", "", "")
			want := []string{"SUMMARY.md", "notes/step-001.md", "notes/step-002.md"}
			got := tarGzNames(t, data)
			for _, w := range want {
				if !slices.Contains(got, w) {
					t.Errorf("archive lacks %s: %v", w, got)
				}
			}
			// The sandbox is gone.
			rt := engineRuntime(t, host)
			// It is destroyed right after the job is finished.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				left, err := rt.List(t.Context(), map[string]string{drydock.LabelJob: id})
				if err == nil && len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("sandboxes left behind: %v %v", left, err)
				}
			}
		})
	}
}
