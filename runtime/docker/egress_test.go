package docker

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/egress"
	"github.com/drydockhq/drydock/runtime/runtimetest"
)

// hostServer serves name on addr (127.0.0.2:0 and the like: the whole of
// 127/8 is this host's loopback) until the test ends; it returns host:port.
func hostServer(t *testing.T, addr, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", name)
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	return ln.Addr().String()
}

// allowlist is a job's egress list as the store would hold it.
type allowlist struct {
	mu   sync.Mutex
	list []string
}

func (a *allowlist) set(list ...string) {
	a.mu.Lock()
	a.list = list
	a.mu.Unlock()
}

func (a *allowlist) rules(context.Context, string) ([]drydock.EgressRule, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return drydock.ParseEgress(a.list)
}

// realSandbox creates a sandbox of the real image with this tree's toolboxd.
func realSandbox(t *testing.T, rt *Runtime, img string, egressList ...string) *drydock.Sandbox {
	t.Helper()
	sb, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "egress-" + drydock.RandomHex(4), Image: img, Egress: egressList})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rt.Destroy(ctx, sb.ID); err != nil {
			t.Errorf("Destroy: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := runtimetest.WaitHealthy(ctx, sb); err != nil {
		t.Fatalf("sandbox not healthy: %v", err)
	}
	return sb
}

// TestEgressOnlyThroughTheProxy: a sandbox reaches what its job allows, by
// name of the egress proxy on the host, and nothing else: not a server the
// list leaves out, not the orchestrator's API or the host's other ports
// even when a rule names them, not another sandbox, not the engine.
func TestEgressOnlyThroughTheProxy(t *testing.T) {
	t.Parallel()
	forRealImage(t, func(t *testing.T, s setup) {
		{
			host, img := s.host, s.image
			rt := s.newRuntime(t)
			ctx := t.Context()

			allowed := hostServer(t, "127.0.0.2:0", "allowed")
			other := hostServer(t, "127.0.0.2:0", "other")
			api := hostServer(t, "127.0.0.1:0", "the orchestrator") // stands for the API
			tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello over tls") }))
			tlsLn, err := net.Listen("tcp", "127.0.0.2:0")
			if err != nil {
				t.Skip(err)
			}
			tlsSrv.Listener = tlsLn
			tlsSrv.StartTLS()
			t.Cleanup(tlsSrv.Close)
			tlsAddr := hostPort(t, tlsSrv.URL)

			list := &allowlist{}
			list.set(allowed, tlsAddr, api, "localhost:"+portOf(api))
			denied := make(chan egress.Denial, 64)
			proxy := egress.New(egress.Config{
				Rules:   list.rules,
				Private: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}, // the operator opens this one
				OnDeny:  func(_ string, d egress.Denial) { denied <- d },
			})

			sb := realSandbox(t, rt, img, "127.0.0.2")
			bystander := realSandbox(t, rt, img)
			sock, err := rt.EgressSocket(sb)
			if err != nil {
				t.Fatal(err)
			}
			closer, err := proxy.Listen("job", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer closer.Close()
			cli := rt.Client()
			curl := func(args string) execResult {
				t.Helper()
				return sh(ctx, t, cli, sb.ID, "curl -sS -m 15 "+args+" 2>&1")
			}

			if r := curl("http://" + allowed + "/"); r.stdout != "hello from allowed" {
				t.Errorf("allowed server over plain HTTP: %+v", r)
			}
			// What the detour costs: five requests, each a new connection
			// through toolboxd's forwarder and the host's proxy.
			if r := sh(ctx, t, cli, sb.ID, "for i in 1 2 3 4 5; do curl -s -o /dev/null -w '%{time_total} ' http://"+allowed+"/; done"); r.exit == 0 {
				t.Logf("curl through the proxy, seconds per request: %s", r.stdout)
			}
			if r := curl("-k https://" + tlsAddr + "/"); r.stdout != "hello over tls" {
				t.Errorf("allowed server over TLS (CONNECT): %+v", r)
			}
			if r := curl("-i http://" + other + "/"); !strings.Contains(r.stdout, "403") || !strings.Contains(r.stdout, "not in the job's egress allowlist") {
				t.Errorf("server not in the list: %+v", r)
			}
			if r := curl("-k https://" + other + "/"); r.exit == 0 || !strings.Contains(r.stdout, "403") {
				t.Errorf("server not in the list over CONNECT: %+v", r)
			}
			// Inside the sandbox, 127.0.0.1 is the sandbox's own loopback:
			// the host's API is not there.
			if r := curl("http://" + api + "/"); r.exit == 0 || strings.Contains(r.stdout, "hello") {
				t.Errorf("the orchestrator's API at its host address: %+v", r)
			}
			// Through the proxy, rules name the API by address and by name,
			// but loopback other than what the operator opened stays shut.
			if r := curl("--noproxy '' -x http://127.0.0.1:3128 -i http://" + api + "/"); !strings.Contains(r.stdout, "403") || !strings.Contains(r.stdout, "not a public address") {
				t.Errorf("the orchestrator's API through the proxy: %+v", r)
			}
			if r := curl("--noproxy '' -x http://127.0.0.1:3128 -i http://localhost:" + portOf(api) + "/"); !strings.Contains(r.stdout, "403") || !strings.Contains(r.stdout, "resolves to 127.0.0.1") {
				t.Errorf("the orchestrator's API by a name that resolves to it: %+v", r)
			}
			// Around the proxy: the sandbox's own loopback and no interface.
			for _, dest := range []string{allowed, api, "10.0.2.2:80", "172.17.0.1:2375", "[::1]:" + portOf(api)} {
				if r := curl("--noproxy '*' http://" + dest + "/"); r.exit == 0 || strings.Contains(r.stdout, "hello") {
					t.Errorf("%s reached around the proxy: %+v", dest, r)
				}
			}
			if ifs := interfaces(t, rt, sb.ID); !slices.Equal(ifs, []string{"lo"}) {
				t.Errorf("interfaces: %q, want lo only", ifs)
			}
			if r := sh(ctx, t, cli, sb.ID, "ls -a /run/toolbox; ls /var/run/docker.sock /run/podman/podman.sock "+strings.TrimPrefix(host, "unix://")+" 2>&1"); strings.Contains(r.stdout, "docker.sock\n") || !strings.Contains(r.stdout, "No such file") {
				t.Errorf("sockets and engine: %+v", r)
			}
			// Another sandbox's toolboxd is a socket in a directory this one
			// does not have, and no TCP address at all.
			if r := sh(ctx, t, cli, sb.ID, "ls "+bystander.Endpoint.Address+" 2>&1; ls /run/toolbox"); !strings.Contains(r.stdout, "No such file") || strings.Count(strings.TrimSpace(r.stdout), "\n") != 2 {
				t.Errorf("another sandbox's socket: %+v", r)
			}
			if r := sh(ctx, t, cli, bystander.ID, "curl -sS -m 15 -i http://"+allowed+"/ 2>&1"); !strings.Contains(r.stdout, "502") || strings.Contains(r.stdout, "hello") {
				t.Errorf("a sandbox without a proxy attached: %+v", r)
			}
			if len(denied) == 0 {
				t.Error("no denial was reported")
			}

			// The list changes while the sandbox runs.
			list.set(other)
			proxy.Changed("job")
			if r := curl("http://" + other + "/"); r.stdout != "hello from other" {
				t.Errorf("newly allowed server: %+v", r)
			}
			if r := curl("-i http://" + allowed + "/"); !strings.Contains(r.stdout, "403") {
				t.Errorf("removed server: %+v", r)
			}
		}
	})
}

func hostPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func portOf(hostport string) string {
	_, p, _ := net.SplitHostPort(hostport)
	return p
}
