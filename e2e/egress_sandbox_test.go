package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/runtimetest"
)

// loopbackServer serves "hello from NAME" on addr until the test ends and
// returns its host:port. The host's whole 127/8 is loopback, while inside
// a sandbox only the proxy leads out, so 127.0.0.2 is a destination that
// the sandbox can reach only when the proxy lets it.
func loopbackServer(t *testing.T, addr, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello from %s", name) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// inSandbox runs a shell command in the sandbox as its user and returns its
// combined output.
func inSandbox(t *testing.T, cli *client.Client, id, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ex, err := cli.ExecCreate(ctx, id, client.ExecCreateOptions{AttachStdout: true, AttachStderr: true, Cmd: []string{"sh", "-c", script + " 2>&1"}})
	if err != nil {
		t.Fatalf("exec in %s: %v", id, err)
	}
	att, err := cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		t.Fatalf("exec attach: %v", err)
	}
	defer att.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, att.Reader); err != nil {
		t.Fatalf("exec output: %v", err)
	}
	return out.String()
}

// The egress list of a running job is what its sandbox can reach, and a
// change through the API takes effect while it runs, also after the server
// restarted and reattached to the sandbox.
func TestEgressFollowsTheJobsList(t *testing.T) {
	t.Parallel()
	for _, e := range engines() {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			host := os.Getenv(e.env)
			if host == "" {
				t.Skipf("%s not set: no %s engine to run sandboxes on (make test starts one)", e.env, e.name)
			}
			img := runtimetest.CurrentImage(t, host)
			a := loopbackServer(t, "127.0.0.2:0", "a")
			b := loopbackServer(t, "127.0.0.2:0", "b")

			node := fmt.Sprintf("e2e-egress-%s-%d", e.name, os.Getpid())
			s := newServer(t, "--node-id", node, "--egress-private", "127.0.0.2/32")
			t.Cleanup(func() { destroyByServer(t, host, node) })
			for i, arg := range s.args {
				if arg == "local" && s.args[i-1] == "--runtime" {
					s.args[i] = "docker"
				}
			}
			s.args = append(s.args, "--docker-host", host, "--image-headless", img)
			s.start()
			rt := engineRuntime(t, host)
			cli := rt.Client()

			id := s.schedule(`{"task": "wait [fake:steps=0] [fake:hang]", "timeout": "10m", "egress": ["` + a + `"]}`)
			var sb string
			deadline := time.Now().Add(2 * time.Minute)
			for sb == "" {
				sbs, err := rt.List(t.Context(), map[string]string{drydock.LabelServer: node, drydock.LabelJob: id})
				if err != nil {
					t.Fatal(err)
				}
				if len(sbs) == 1 && sbs[0].State == drydock.SandboxRunning { // not merely created
					sb = sbs[0].ID
				} else if j := s.status(id); j.Status.Terminal() || time.Now().After(deadline) {
					t.Fatalf("job %s: %s %q\n%s", id, j.Status, j.Error, s.logs)
				}
				time.Sleep(100 * time.Millisecond)
			}
			get := func(dest string) string {
				return inSandbox(t, cli, sb, "curl -sS -m 15 -i http://"+dest+"/")
			}
			// The runner opens the proxy once toolboxd is ready; until
			// then toolboxd answers 502.
			waitReachable := func(dest string) {
				t.Helper()
				deadline := time.Now().Add(time.Minute)
				for {
					out := get(dest)
					if strings.Contains(out, "hello from") {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s never became reachable: %q\n%s", dest, out, s.logs)
					}
					time.Sleep(200 * time.Millisecond)
				}
			}

			waitReachable(a)
			if out := get(b); !strings.Contains(out, "403") || !strings.Contains(out, "not in the job's egress allowlist") {
				t.Errorf("b before it is allowed: %q", out)
			}
			// The orchestrator's API: not on the sandbox's loopback, and
			// not through the proxy either.
			if out := inSandbox(t, cli, sb, "curl -sS -m 15 http://"+s.addr+"/healthz"); strings.Contains(out, "ok") && !strings.Contains(out, "Failed") {
				t.Errorf("the API from inside the sandbox: %q", out)
			}
			if out := inSandbox(t, cli, sb, "curl -sS -m 15 -i --noproxy '' -x http://127.0.0.1:3128 http://"+s.addr+"/healthz"); !strings.Contains(out, "403") {
				t.Errorf("the API through the proxy: %q", out)
			}

			code, body := s.do("PUT", "/v1/jobs/"+id+"/egress", "", `{"egress": ["`+b+`"]}`)
			if code != 200 {
				t.Fatalf("PUT egress: %d %s", code, body)
			}
			if out := get(b); !strings.Contains(out, "hello from b") {
				t.Errorf("b after it was allowed: %q", out)
			}
			if out := get(a); !strings.Contains(out, "403") {
				t.Errorf("a after it was removed: %q", out)
			}

			// A new server process reattaches to the sandbox and brings
			// its proxy back.
			s.kill()
			if out := get(b); strings.Contains(out, "hello from") {
				t.Errorf("b reachable while no server runs: %q", out)
			}
			s.start()
			waitReachable(b)
			if out := get(a); !strings.Contains(out, "403") {
				t.Errorf("a after the restart: %q", out)
			}

			var changed, refused bool
			for _, ev := range s.events(id) {
				changed = changed || strings.Contains(string(ev.Data), "egress allowlist changed; allowed "+b+"; removed "+a)
				refused = refused || strings.Contains(string(ev.Data), "egress refused: "+b)
			}
			if !changed || !refused {
				t.Errorf("events: change recorded %t, refusal recorded %t", changed, refused)
			}
			if code, body := s.do("POST", "/v1/jobs/"+id+"/cancel", "", ""); code != 202 {
				t.Fatalf("cancel: %d %s", code, body)
			}
			if j, _ := s.waitTerminal(id, 2*time.Minute); j.Status != drydock.StatusCancelled {
				t.Errorf("job ended %s: %s", j.Status, j.Error)
			}
		})
	}
}
