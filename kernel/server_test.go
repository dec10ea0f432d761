package kernel

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

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
	if _, asked := k.Ready()[ComponentServer]; asked {
		t.Fatal("jupyter server reported before anyone asked for it")
	}

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	start := time.Now()
	url, err := k.StartServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("jupyter server answered %v after StartServer", time.Since(start))
	if url != "http://"+addr+"/jupyter/" {
		t.Errorf("url %q", url)
	}
	if !k.Ready()[ComponentServer] {
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
	if _, err := k.StartServer(ctx); err != nil {
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
	_, err = k.StartServer(ctx)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("want an early failure on a taken port, got %v (ctx %v)", err, ctx.Err())
	}
	if !strings.Contains(err.Error(), "is not available") {
		t.Errorf("error does not say why: %v", err)
	}
	if k.Ready()[ComponentServer] {
		t.Error("server reported ready")
	}
}
