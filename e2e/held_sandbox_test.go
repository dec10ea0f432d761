package e2e_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// A job scheduled with agent "none" is a real sandbox held for its caller
// on Docker (runc and gVisor) and on Podman: prepared like any job (non-root, its secrets in
// the environment but masked in what comes back, no egress unless listed),
// commands and files through the API, then archived at the cancel.
func TestHeldSandboxOnEngines(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, env, isolation string }{{"gvisor", "DRYDOCK_TEST_DOCKER_HOST", drydock.IsolationGVisor}}
	for _, e := range engines() {
		cases = append(cases, struct{ name, env, isolation string }{e.name, e.env, ""})
	}
	for _, e := range cases {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			host := os.Getenv(e.env)
			if host == "" {
				t.Skipf("%s not set: no %s engine to run sandboxes on (make test starts one)", e.env, e.name)
			}
			if e.isolation == drydock.IsolationGVisor && !engineHasRunsc(t, host) {
				t.Skip("the test dockerd has no runsc runtime (scripts/testenv/docker-up.sh registers one)")
			}
			image := os.Getenv("DRYDOCK_TEST_IMAGE_HEADLESS")
			if image == "" {
				image = "drydock-sandbox:headless"
			}
			node := "e2e-" + e.name + "-" + strings.ReplaceAll(t.Name(), "/", "-")
			s := newServer(t, "--node-id", node)
			t.Cleanup(func() { destroyByServer(t, host, node) })
			for i, a := range s.args {
				if a == "local" && s.args[i-1] == "--runtime" {
					s.args[i] = "docker"
				}
			}
			s.args = append(s.args, "--docker-host", host, "--image-headless", image)
			if e.isolation != "" {
				s.args = append(s.args, "--isolation", e.isolation)
			}
			s.start()
			const secret = "held-sandbox-secret-0123456789"
			id := s.schedule(`{"agent": "none", "timeout": "5m", "secrets": {"API_KEY": "` + secret + `"}}`)
			for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
				if slices.ContainsFunc(s.events(id), func(e *drydock.Event) bool { return strings.Contains(string(e.Data), `"kind":"sandbox_held"`) }) {
					break
				}
				if j := s.status(id); j.Status.Terminal() || time.Now().After(deadline) {
					t.Fatalf("the sandbox was never held: %s %q\n%s", j.Status, j.Error, s.logs)
				}
			}
			command := func(cmd string) map[string]any {
				t.Helper()
				body, _ := json.Marshal(map[string]any{"command": cmd, "timeout": 60})
				code, data := s.do("POST", "/v1/jobs/"+id+"/commands", "", string(body))
				var res map[string]any
				if code != 200 || json.Unmarshal(data, &res) != nil {
					t.Fatalf("command %q: %d %s", cmd, code, data)
				}
				if strings.Contains(string(data), secret) {
					t.Fatalf("command %q: the secret came back: %s", cmd, data)
				}
				return res
			}
			res := command(`id -u; echo "key=$API_KEY"; pwd`)
			out, _ := res["output"].(string)
			if !strings.Contains(out, "1000\n") || !strings.Contains(out, "key="+strings.Repeat("*", len(secret))) || !strings.Contains(out, "/workspace") {
				t.Errorf("in the sandbox: %q; want uid 1000, the secret set but masked, the workspace", out)
			}
			// The job's isolation is the server's, as for a job with an agent.
			if e.isolation == drydock.IsolationGVisor {
				if j := s.status(id); j.Isolation != drydock.IsolationGVisor {
					t.Errorf("held job's isolation %q; want gvisor", j.Isolation)
				}
				if out, _ := command("cat /proc/version")["output"].(string); !strings.Contains(out, "gvisor") {
					t.Errorf("the held sandbox's kernel is not gVisor's: %q", out)
				}
			}
			if code, data := s.do("PUT", "/v1/jobs/"+id+"/files/tools/hello.py", "", `{"text": "print('hello', 6*7)\n"}`); code != 200 {
				t.Fatalf("write file: %d %s", code, data)
			}
			if out, _ := command("python3 tools/hello.py")["output"].(string); !strings.Contains(out, "hello 42") {
				t.Errorf("running the written file: %q", out)
			}
			// No egress was listed: the proxy refuses the world.
			if res := command("curl -sS -m 10 -o /dev/null https://example.com; echo rc=$?"); !strings.Contains(res["output"].(string), "rc=") || strings.Contains(res["output"].(string), "rc=0") {
				t.Errorf("a held sandbox without egress reached the network: %v", res)
			}
			if code, data := s.do("POST", "/v1/jobs/"+id+"/cancel", "", ""); code != 202 {
				t.Fatalf("cancel: %d %s", code, data)
			}
			j, seen := s.waitTerminal(id, 2*time.Minute)
			if j.Status != drydock.StatusCancelled {
				t.Fatalf("held job ended %s (%v): %s", j.Status, seen, j.Error)
			}
			_, data := s.do("GET", "/v1/jobs/"+id+"/artifact.tar.gz", "", "")
			if got := tarGzNames(t, data); !slices.Contains(got, "tools/hello.py") {
				t.Errorf("the archive lacks the written file: %v", got)
			}
		})
	}
}

// On Kubernetes a held sandbox is the job's pod, reached through the API
// like any other's: a command and a file, then the cancel archives it.
func TestKubernetesHeldSandbox(t *testing.T) {
	k := newKubeHarness(t)
	s := k.server(t)
	s.start()
	id := s.schedule(`{"agent": "none", "timeout": "5m"}`)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if slices.ContainsFunc(s.events(id), func(e *drydock.Event) bool { return strings.Contains(string(e.Data), `"kind":"sandbox_held"`) }) {
			break
		}
		if j := s.status(id); j.Status.Terminal() || time.Now().After(deadline) {
			t.Fatalf("the pod was never held: %s %q\n%s", j.Status, j.Error, s.logs)
		}
	}
	if code, data := s.do("PUT", "/v1/jobs/"+id+"/files/made.txt", "", `{"text": "in a pod\n"}`); code != 200 {
		t.Fatalf("write file: %d %s", code, data)
	}
	code, data := s.do("POST", "/v1/jobs/"+id+"/commands", "", `{"command": "cat made.txt && echo exit-ok"}`)
	if code != 200 || !strings.Contains(string(data), "in a pod") || !strings.Contains(string(data), "exit-ok") {
		t.Fatalf("command in the pod: %d %s", code, data)
	}
	if code, data := s.do("POST", "/v1/jobs/"+id+"/cancel", "", ""); code != 202 {
		t.Fatalf("cancel: %d %s", code, data)
	}
	if j, seen := s.waitTerminal(id, 2*time.Minute); j.Status != drydock.StatusCancelled {
		t.Fatalf("held job ended %s (%v): %s", j.Status, seen, j.Error)
	}
	_, arch := s.do("GET", "/v1/jobs/"+id+"/artifact.tar.gz", "", "")
	if got := tarGzNames(t, arch); !slices.Contains(got, "made.txt") {
		t.Errorf("the archive lacks the written file: %v", got)
	}
}
