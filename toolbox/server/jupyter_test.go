package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/kernel"
	"github.com/drydockhq/drydock/runtime/runtimetest"
)

// fakeJupyter stands in for the Jupyter server: it records what reaches it
// and echoes, over HTTP and WebSocket, on a unix socket as toolboxd's real
// one listens.
type fakeJupyter struct {
	sock     string
	startErr error

	mu     sync.Mutex
	starts []string
	seen   []seenRequest
}

type seenRequest struct {
	Method, Path, RawPath, Query, Host, Auth, Body string
	Headers                                        string // every header value, to look for leaks
}

func newFakeJupyter(t *testing.T) *fakeJupyter {
	t.Helper()
	j := &fakeJupyter{sock: filepath.Join(t.TempDir(), "j.sock")}
	ln, err := net.Listen("unix", j.sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(j.serve)}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return j
}

func (j *fakeJupyter) Start(ctx context.Context, base string) (string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.starts = append(j.starts, base)
	if j.startErr != nil {
		return "", j.startErr
	}
	return "/" + strings.Trim(base, "/") + "/", nil
}

func (j *fakeJupyter) Dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", j.sock)
}

func (j *fakeJupyter) Token() string { return "jupyter-own-token" }

func (j *fakeJupyter) requests() []seenRequest {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]seenRequest(nil), j.seen...)
}

func (j *fakeJupyter) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var all []string
	for _, vs := range r.Header {
		all = append(all, vs...)
	}
	sr := seenRequest{Method: r.Method, Path: r.URL.Path, RawPath: r.URL.RawPath, Query: r.URL.RawQuery, Host: r.Host,
		Auth: r.Header.Get("Authorization"), Body: string(body), Headers: strings.Join(all, "\n")}
	j.mu.Lock()
	j.seen = append(j.seen, sr)
	j.mu.Unlock()
	switch {
	case r.Header.Get("Upgrade") != "":
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"v1.kernel.websocket.jupyter.org"}})
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(-1)
		for {
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, append([]byte("echo:"), msg...)); err != nil {
				return
			}
		}
	case r.URL.Path == "/stream":
		// One line, then silence until the client has seen it.
		w.Write([]byte("first\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(sr)
	}
}

func TestJupyterRoutesWithoutJupyter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct{ method, path string }{
		{"POST", "/v1/jupyter/start"}, {"GET", "/v1/jupyter/proxy/api/status"}, {"PUT", "/v1/jupyter/proxy/x"},
	} {
		r := b.do(c.method, c.path, `{}`)
		if r.status != http.StatusNotImplemented || r.errCode() != drydock.ENOTIMPLEMENTED {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.body)
		}
	}
}

func TestJupyterStart(t *testing.T) {
	t.Parallel()
	j := newFakeJupyter(t)
	b := setup(t, func(c *Config) { c.Jupyter = j })
	var got jupyterStartReply
	b.ok(http.StatusOK, &got, "POST", "/v1/jupyter/start", map[string]string{"base_url": "/jobs/j1/jupyter"})
	if diff := cmp.Diff(jupyterStartReply{Ready: true, BaseURL: "/jobs/j1/jupyter/"}, got); diff != "" {
		t.Errorf("reply (-want +got):\n%s", diff)
	}
	// Without the token nothing starts.
	if r := b.do("POST", "/v1/jupyter/start", `{"base_url": "/x/"}`, "Authorization", ""); r.status != http.StatusUnauthorized {
		t.Errorf("without a token: %d", r.status)
	}
	if r := b.do("POST", "/v1/jupyter/start", `{"base": "/x/"}`); r.status != http.StatusBadRequest {
		t.Errorf("unknown field: %d %s", r.status, r.body)
	}
	if diff := cmp.Diff([]string{"/jobs/j1/jupyter"}, j.starts); diff != "" {
		t.Errorf("starts (-want +got):\n%s", diff)
	}
	// The kernel's verdicts keep their codes; "not up yet" says when to retry.
	j.startErr = drydock.Errorf(drydock.EUNAVAILABLE, "jupyter server is not ready yet")
	r := b.do("POST", "/v1/jupyter/start", `{"base_url": "/x/"}`)
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), "not ready yet") {
		t.Errorf("while starting: %d %v %s", r.status, r.header, r.body)
	}
	j.startErr = drydock.Errorf(drydock.EINVALID, "base URL is not a clean path")
	if r := b.do("POST", "/v1/jupyter/start", `{"base_url": "/a/../b"}`); r.status != http.StatusBadRequest || r.errCode() != drydock.EINVALID {
		t.Errorf("bad base URL: %d %s", r.status, r.body)
	}
}

func TestJupyterProxy(t *testing.T) {
	t.Parallel()
	j := newFakeJupyter(t)
	b := setup(t, func(c *Config) { c.Jupyter = j })

	// The path after the prefix, the query and the outside Host reach
	// Jupyter, with Jupyter's token in place of toolboxd's.
	var seen seenRequest
	req, _ := http.NewRequest("GET", b.ts.URL+"/v1/jupyter/proxy/jobs/j1/jupyter/api/contents/a%2Fb?type=file&x=1", nil)
	req.Host = "orchestrator.test:8080"
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := b.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&seen)
	resp.Body.Close()
	want := seenRequest{Method: "GET", Path: "/jobs/j1/jupyter/api/contents/a/b", RawPath: "/jobs/j1/jupyter/api/contents/a%2Fb",
		Query: "type=file&x=1", Host: "orchestrator.test:8080", Auth: "token jupyter-own-token"}
	seen.Headers = ""
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("what Jupyter saw (-want +got):\n%s", diff)
	}
	// Any method, with its body; a request id does not make toolboxd
	// replay a proxied request.
	for range 2 {
		b.ok(http.StatusOK, &seen, "POST", "/v1/jupyter/proxy/api/kernels", `{"name":"python3"}`, "X-Request-Id", "same")
		if seen.Method != "POST" || seen.Body != `{"name":"python3"}` {
			t.Errorf("post: %+v", seen)
		}
	}
	posts := 0
	for _, r := range j.requests() {
		if r.Method == "POST" {
			posts++
		}
	}
	if posts != 2 {
		t.Errorf("%d POSTs reached Jupyter, want 2 (none replayed)", posts)
	}
	b.ok(http.StatusOK, &seen, "DELETE", "/v1/jupyter/proxy/api/kernels/k1", nil)
	if seen.Method != "DELETE" || seen.Path != "/api/kernels/k1" {
		t.Errorf("delete: %+v", seen)
	}
	// Without toolboxd's token nothing reaches Jupyter.
	n := len(j.requests())
	if r := b.do("GET", "/v1/jupyter/proxy/api/status", nil, "Authorization", "token jupyter-own-token"); r.status != http.StatusUnauthorized {
		t.Errorf("with Jupyter's token instead of toolboxd's: %d", r.status)
	}
	if got := len(j.requests()); got != n {
		t.Errorf("an unauthenticated request reached Jupyter")
	}

	// A WebSocket with Jupyter's subprotocol, both ways.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.ts.URL, "http")+"/v1/jupyter/proxy/jobs/j1/jupyter/api/kernels/k1/channels?session_id=s", &websocket.DialOptions{
		HTTPHeader:   http.Header{"Authorization": {"Bearer " + testToken}},
		Subprotocols: []string{"v1.kernel.websocket.jupyter.org"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if ws.Subprotocol() != "v1.kernel.websocket.jupyter.org" {
		t.Errorf("subprotocol %q", ws.Subprotocol())
	}
	for _, msg := range []string{"one", strings.Repeat("x", 1<<20)} {
		if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		ws.SetReadLimit(2 << 20)
		if _, got, err := ws.Read(ctx); err != nil || string(got) != "echo:"+msg {
			t.Fatalf("echo of %d bytes: %d bytes, %v", len(msg), len(got), err)
		}
	}
	ws.Close(websocket.StatusNormalClosure, "")

	// Responses stream: the first line arrives while Jupyter still writes.
	req, _ = http.NewRequestWithContext(ctx, "GET", b.ts.URL+"/v1/jupyter/proxy/stream", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err = b.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	resp.Body.Close()
	if err != nil || line != "first\n" {
		t.Errorf("streamed line %q, %v", line, err)
	}

	for _, r := range j.requests() {
		if strings.Contains(r.Headers, testToken) || strings.Contains(r.Query, testToken) {
			t.Errorf("toolboxd's token reached Jupyter: %+v", r)
		}
	}
}

func TestJupyterProxyWhenJupyterIsDown(t *testing.T) {
	t.Parallel()
	j := &fakeJupyter{sock: filepath.Join(t.TempDir(), "nothing.sock")}
	b := setup(t, func(c *Config) { c.Jupyter = j })
	r := b.do("GET", "/v1/jupyter/proxy/api/status", nil)
	if r.status != http.StatusServiceUnavailable || r.errCode() != drydock.EUNAVAILABLE || !strings.Contains(string(r.body), "/v1/jupyter/start") {
		t.Errorf("jupyter down: %d %s", r.status, r.body)
	}
}

// kernelJupyter is the adapter cmd/toolboxd uses, repeated here to drive a
// real Jupyter server through the routes.
type kernelJupyter struct{ k *kernel.Kernel }

func (a kernelJupyter) Start(ctx context.Context, base string) (string, error) {
	u, err := a.k.StartServer(ctx, base)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(u, "http://localhost"), nil
}
func (a kernelJupyter) Dial(ctx context.Context) (net.Conn, error) { return a.k.DialServer(ctx) }
func (a kernelJupyter) Token() string                              { return a.k.ServerToken() }

// A real Jupyter server through toolboxd: start, list kernels, start one and
// run code in it over the kernel's WebSocket channels.
func TestJupyterThroughToolboxdForReal(t *testing.T) {
	t.Parallel()
	// Debian's python: one earlier on PATH may lack its Jupyter modules.
	python := "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import jupyter_server, ipykernel").Run(); err != nil {
		t.Skip("Debian's jupyter_server and ipykernel are not installed; run scripts/testenv/sandbox-tools.sh")
	}
	ws := t.TempDir()
	k := kernel.New(kernel.Config{Python: python, Dir: ws, RuntimeDir: t.TempDir(), Env: []string{"HOME=" + t.TempDir()},
		Server: kernel.ServerConfig{Socket: filepath.Join(t.TempDir(), "j.sock")}}, nil)
	if err := k.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	b := setup(t, func(c *Config) { c.Jupyter = kernelJupyter{k} })

	base := "/jobs/real/jupyter/"
	start := time.Now()
	b.ok(http.StatusOK, nil, "POST", "/v1/jupyter/start", map[string]string{"base_url": base})
	t.Logf("start answered after %v", time.Since(start))
	var kernels []map[string]any
	b.ok(http.StatusOK, &kernels, "GET", "/v1/jupyter/proxy"+base+"api/kernels", nil)
	if len(kernels) != 0 {
		t.Errorf("kernels before any was started: %v", kernels)
	}
	var kern struct{ ID string }
	b.ok(http.StatusCreated, &kern, "POST", "/v1/jupyter/proxy"+base+"api/kernels", `{"name": "python3"}`)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.ts.URL, "http")+"/v1/jupyter/proxy"+base+"api/kernels/"+kern.ID+"/channels",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	got, err := runtimetest.JupyterExecute(ctx, conn, "6 * 7")
	if err != nil {
		t.Fatal(err)
	}
	if got != "42" {
		t.Errorf("execute_result %q, want 42", got)
	}
}
