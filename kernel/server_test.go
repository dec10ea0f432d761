package kernel

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

func requireJupyterServer(t *testing.T) string {
	t.Helper()
	python := RequirePython(t)
	if err := exec.Command(python, "-c", "import jupyter_server").Run(); err != nil {
		t.Skip("jupyter_server is not installed; run scripts/testenv/sandbox-tools.sh")
	}
	return python
}

// socketClient speaks HTTP to the kernel's Jupyter server over whatever it
// listens on.
func socketClient(t *testing.T, k *Kernel) *http.Client {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return k.DialServer(ctx) }}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestJupyterServerStartsOnDemandWithToken(t *testing.T) {
	t.Parallel()
	python := RequirePython(t)
	if err := exec.Command(python, "-c", "import jupyter_server").Run(); err != nil {
		t.Skip("jupyter_server is not installed; run scripts/testenv/sandbox-tools.sh")
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	k := setup(t, func(c *Config) { c.Server = ServerConfig{Addr: addr, BaseURL: "/jupyter"} })
	if _, asked := k.Ready()[toolbox.ComponentJupyterServer]; asked {
		t.Fatal("jupyter server reported before anyone asked for it")
	}

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	start := time.Now()
	url, err := k.StartServer(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("jupyter server answered %v after StartServer", time.Since(start))
	if url != "http://"+addr+"/jupyter/" {
		t.Errorf("url %q", url)
	}
	if !k.Ready()[toolbox.ComponentJupyterServer] {
		t.Error("server not reported ready")
	}
	get := func(token string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"api/status", nil)
		if token != "" {
			req.Header.Set("Authorization", "token "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(k.ServerToken()); code != http.StatusOK {
		t.Errorf("with the token: %d", code)
	}
	if code := get(""); code != http.StatusForbidden {
		t.Errorf("without a token: %d, want 403", code)
	}
	if code := get("wrong"); code != http.StatusForbidden {
		t.Errorf("with a wrong token: %d, want 403", code)
	}
	// A second call finds it running.
	if _, err := k.StartServer(ctx, "/jupyter"); err != nil {
		t.Fatal(err)
	}
}

func TestJupyterServerReportsWhyItCannotStart(t *testing.T) {
	t.Parallel()
	python := RequirePython(t)
	if err := exec.Command(python, "-c", "import jupyter_server").Run(); err != nil {
		t.Skip("jupyter_server is not installed; run scripts/testenv/sandbox-tools.sh")
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	k := setup(t, func(c *Config) { c.Server = ServerConfig{Addr: taken.Addr().String()} })

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	_, err = k.StartServer(ctx, "")
	if err == nil || ctx.Err() != nil {
		t.Fatalf("want an early failure on a taken port, got %v (ctx %v)", err, ctx.Err())
	}
	if !strings.Contains(err.Error(), "is not available") {
		t.Errorf("error does not say why: %v", err)
	}
	if k.Ready()[toolbox.ComponentJupyterServer] {
		t.Error("server reported ready")
	}
}

// toolboxd's setting: a unix socket, and the base URL given per start by
// the orchestrator. Another base URL restarts the server under it.
func TestJupyterServerOnSocketFollowsTheBaseURL(t *testing.T) {
	t.Parallel()
	requireJupyterServer(t)
	sock := filepath.Join(t.TempDir(), "j.sock")
	k := setup(t, func(c *Config) { c.Server = ServerConfig{Socket: sock} })
	hc := socketClient(t, k)
	status := func(ctx context.Context, path string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://localhost"+path, nil)
		req.Header.Set("Authorization", "token "+k.ServerToken())
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	// Two people open the page at once: one server, both answered.
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := k.StartServer(ctx, "/jobs/a/jupyter/")
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket: %v %v", fi, err)
	}
	if code := status(ctx, "/jobs/a/jupyter/api/status"); code != 200 {
		t.Errorf("under /jobs/a/jupyter/: %d", code)
	}
	start := time.Now()
	url, err := k.StartServer(ctx, "jobs/b/jupyter")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restart under another base URL took %v", time.Since(start))
	if url != "http://localhost/jobs/b/jupyter/" || k.ServerURL() != url {
		t.Errorf("url %q, ServerURL %q", url, k.ServerURL())
	}
	if code := status(ctx, "/jobs/b/jupyter/api/status"); code != 200 {
		t.Errorf("under /jobs/b/jupyter/: %d", code)
	}
	if code := status(ctx, "/jobs/a/jupyter/api/status"); code != 404 {
		t.Errorf("the old base URL still answers: %d", code)
	}
	if !k.Ready()[toolbox.ComponentJupyterServer] {
		t.Error("not reported ready")
	}
	// The classic UI, when installed, is where the base URL leads.
	if exec.Command(k.cfg.Python, "-c", "import nbclassic").Run() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("Authorization", "token "+k.ServerToken())
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || strings.TrimSuffix(loc, "?") != "/jobs/b/jupyter/tree" {
			t.Errorf("base URL: %d to %q, want a redirect to the tree", resp.StatusCode, loc)
		}
		if code := status(ctx, "/jobs/b/jupyter/tree"); code != 200 {
			t.Errorf("tree page: %d", code)
		}
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
}

func TestJupyterServerRefusesBadBaseURLs(t *testing.T) {
	t.Parallel()
	k := setup(t, func(c *Config) { c.Python = RequirePython(t) })
	for _, base := range []string{"/a/../b/", "/a//b/", "/a b/", "/a/?x=1", "/a/%2e/", "/a\\nb/"} {
		_, err := k.StartServer(t.Context(), base)
		if drydock.ErrorCode(err) != drydock.EINVALID {
			t.Errorf("%q: %v, want invalid", base, err)
		}
	}
	if _, asked := k.Ready()[toolbox.ComponentJupyterServer]; asked {
		t.Error("a refused start counts as asked")
	}
	for in, want := range map[string]string{"": "/", "/": "/", "a": "/a/", "/jobs/x-1/jupyter": "/jobs/x-1/jupyter/", "/a.b_c~d/": "/a.b_c~d/"} {
		if got, err := cleanBaseURL(in); err != nil || got != want {
			t.Errorf("cleanBaseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
