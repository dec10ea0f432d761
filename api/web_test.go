package api_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
	"github.com/drydockhq/drydock/artifact/local"
	"github.com/drydockhq/drydock/store/sqlite"
	tbserver "github.com/drydockhq/drydock/toolbox/server"
	"github.com/drydockhq/drydock/watch"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

// liveBundle is a server with live views wired to sandboxes the test
// registers.
type liveBundle struct {
	*bundle
	mu        sync.Mutex
	sandboxes map[string]*drydock.Sandbox
	owner     string
}

func setupLive(t testing.TB, dev bool, cfg func(*api.Config)) *liveBundle {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	arts, err := local.New(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	lb := &liveBundle{bundle: &bundle{store: watch.Wrap(st), artifacts: arts, artDir: filepath.Join(dir, "artifacts"), queue: &queue{}}, sandboxes: map[string]*drydock.Sandbox{}, owner: "test-worker"}
	mk := func(id string, admin bool) string {
		secret, hash := drydock.NewTokenSecret()
		if err := st.CreateToken(t.Context(), &drydock.Token{ID: id, Name: id, Admin: admin, CreatedAt: time.Now(), Hash: hash}); err != nil {
			t.Fatal(err)
		}
		return secret
	}
	if !dev {
		lb.alice, lb.bob, lb.admin = mk("tok_alice", false), mk("tok_bob", false), mk("tok_admin", true)
	}
	c := api.Config{DevMode: dev, SSEPoll: 50 * time.Millisecond, LinkKeyFile: filepath.Join(dir, "link.key"),
		Sandboxes: func(ctx context.Context, id string) (*drydock.Sandbox, error) {
			lb.mu.Lock()
			defer lb.mu.Unlock()
			sb, ok := lb.sandboxes[id]
			if !ok {
				return nil, drydock.Errorf(drydock.ENOTFOUND, "no sandbox %s", id)
			}
			return sb, nil
		}}
	if cfg != nil {
		cfg(&c)
	}
	lb.srv = api.New(c, lb.store, lb.queue, arts, prometheus.NewRegistry(), nil)
	hs := httptest.NewServer(lb.srv)
	t.Cleanup(hs.Close)
	lb.url = hs.URL
	return lb
}

// runningJob schedules a job as token and makes it running in sandbox sb.
func (lb *liveBundle) runningJob(t testing.TB, token, body string, sb *drydock.Sandbox) *drydock.Job {
	t.Helper()
	j := lb.create(t, token, body)
	claimed, err := lb.store.ClaimJob(t.Context(), lb.owner, time.Minute)
	if err != nil || claimed == nil || claimed.ID != j.ID {
		t.Fatalf("claim %s: %v %v", j.ID, claimed, err)
	}
	if sb != nil {
		lb.mu.Lock()
		lb.sandboxes[sb.ID] = sb
		lb.mu.Unlock()
		if err := lb.store.UpdateProgress(t.Context(), j.ID, lb.owner, drydock.JobProgress{SandboxID: &sb.ID}); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

func (lb *liveBundle) create(t testing.TB, token, body string) *drydock.Job {
	t.Helper()
	req, _ := http.NewRequest("POST", lb.url+"/v1/jobs", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var j drydock.Job
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&j) != nil {
		t.Fatalf("create job: %d", resp.StatusCode)
	}
	return &j
}

// finish ends a running job with status and an archive built from entries.
func (lb *liveBundle) finish(t testing.TB, id string, status drydock.JobStatus, archive []byte) {
	t.Helper()
	res := drydock.JobResult{Status: status}
	if archive != nil {
		key := id + ".tar.gz"
		n, err := lb.artifacts.Put(t.Context(), key, bytes.NewReader(archive))
		if err != nil {
			t.Fatal(err)
		}
		res.ArtifactKey, res.ArtifactSize = key, n
	}
	if err := lb.store.FinishJob(t.Context(), id, lb.owner, res); err != nil {
		t.Fatal(err)
	}
}

type tarEntry struct {
	name, body, link string
	typ              byte
	size             int64 // for sparse-looking big files: body is repeated zeros
}

func tarGz(t testing.TB, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, ModTime: time.Unix(1700000000, 0), Linkname: e.link}
		switch e.typ {
		case tar.TypeDir:
			h.Mode = 0o755
		case tar.TypeReg:
			h.Size = int64(len(e.body))
			if e.size > 0 {
				h.Size = e.size
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if e.size > 0 {
				tw.Write(make([]byte, e.size))
			} else {
				tw.Write([]byte(e.body))
			}
		}
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// startToolbox serves a real toolboxd over dir on a unix socket and returns
// the sandbox that names it.
func startToolbox(t testing.TB, id, dir string, desktop tbserver.Desktop) *drydock.Sandbox {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "ddtb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "tb.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	tb := tbserver.New(tbserver.Config{Workspace: dir, Token: "tb-" + id, Desktop: desktop, StateDir: filepath.Join(sockDir, "state")}, nil)
	hs := &http.Server{Handler: tb}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close(); tb.Close() })
	return &drydock.Sandbox{ID: id, Runtime: "test", State: drydock.SandboxRunning, Token: "tb-" + id,
		Endpoint: drydock.Endpoint{Network: "unix", Address: sock}}
}

func (lb *liveBundle) get(t testing.TB, path, token string) (*http.Response, []byte) {
	t.Helper()
	return lb.send(t, "GET", path, token, "")
}

func (lb *liveBundle) send(t testing.TB, method, path, token, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, lb.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	return resp, buf.Bytes()
}

func (lb *liveBundle) link(t testing.TB, token, id, scope string, control bool) api.Link {
	t.Helper()
	body := ""
	if control {
		body = `{"control": true}`
	}
	resp, data := lb.send(t, "POST", "/v1/jobs/"+id+"/"+scope+"/link", token, body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s link: %d %s", scope, resp.StatusCode, data)
	}
	var l api.Link
	if err := json.Unmarshal(data, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestUIPagesAndAssets(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	for _, p := range []string{"/", "/jobs/0193aaaa-0000-7000-8000-000000000000", "/evals/20261126-030154-ee3e2ce8"} {
		resp, data := b.get(t, p, "")
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET %s: %d %s", p, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self';") {
			t.Errorf("GET %s: CSP %q", p, csp)
		}
		if !bytes.Contains(data, []byte(`type="module"`)) {
			t.Errorf("GET %s: the page loads no module", p)
		}
	}
	resp, _ := b.get(t, "/ui/app.js", "")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("app.js: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	etag := resp.Header.Get("ETag")
	req, _ := http.NewRequest("GET", b.url+"/ui/app.js", nil)
	req.Header.Set("If-None-Match", etag)
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusNotModified {
		t.Errorf("revalidation with the ETag: %d", resp2.StatusCode)
	}
	for _, p := range []string{"/ui/novnc/core/rfb.js", "/ui/novnc/LICENSE.txt", "/ui/novnc/docs/LICENSE.MPL-2.0"} {
		if resp, _ := b.get(t, p, ""); resp.StatusCode != 200 {
			t.Errorf("GET %s: %d", p, resp.StatusCode)
		}
	}
	for _, p := range []string{"/ui/nope.js", "/ui/index.html"} {
		if resp, _ := b.get(t, p, ""); resp.StatusCode != 404 {
			t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
		}
	}
	if resp, _ := b.get(t, "/ui/../go.mod", ""); resp.StatusCode != 400 {
		t.Errorf("GET /ui/../go.mod: %d, want 400", resp.StatusCode)
	}
}

func TestLinkKeyPersists(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "link.key")
	k1, err := api.LoadLinkKey(path)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := api.LoadLinkKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(k1) != 32 || !bytes.Equal(k1, k2) {
		t.Fatalf("keys differ or are short: %x %x", k1, k2)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v", fi.Mode().Perm())
	}
	os.WriteFile(path, []byte("nope"), 0o600)
	if _, err := api.LoadLinkKey(path); err == nil {
		t.Error("a malformed key was accepted")
	}
}

func TestDesktopLinks(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	sb := &drydock.Sandbox{ID: "sb-links", State: drydock.SandboxRunning, Endpoint: drydock.Endpoint{Network: "unix", Address: "/nonexistent"}}
	j := b.runningJob(t, b.alice, `{"task": "x", "profile": "desktop"}`, sb)

	l := b.link(t, b.alice, j.ID, "desktop", false)
	if l.Control || !strings.Contains(l.URL, "/jobs/"+j.ID+"/desktop?t=") || !strings.HasPrefix(l.WebSocketURL, "ws://") {
		t.Fatalf("link %+v", l)
	}
	if d := time.Until(l.ExpiresAt); d <= 0 || d > api.DefaultLinkTTL {
		t.Errorf("expires in %s", d)
	}
	if c := b.link(t, b.admin, j.ID, "desktop", true); !c.Control {
		t.Errorf("admin asked for control: %+v", c)
	}
	// The page opens with the link and without any token.
	u, _ := url.Parse(l.URL)
	resp, data := b.get(t, u.RequestURI(), "")
	if resp.StatusCode != 200 || !bytes.Contains(data, []byte("desktop.js")) {
		t.Fatalf("desktop page with link: %d %s", resp.StatusCode, data)
	}
	if resp.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Error("the page that carries a link must not leak it as a referrer")
	}
	tok := u.Query().Get("t")
	other := b.runningJobNoSandbox(t, b.alice)
	cases := []struct {
		name, path, token string
		want              int
	}{
		{"no token, no link", "/jobs/" + j.ID + "/desktop", "", 401},
		{"another user's token", "/jobs/" + j.ID + "/desktop", b.bob, 404},
		{"owner token", "/jobs/" + j.ID + "/desktop", b.alice, 200},
		{"link of another job", "/jobs/" + other.ID + "/desktop?t=" + url.QueryEscape(tok), "", 401},
		{"tampered link", "/jobs/" + j.ID + "/desktop?t=" + url.QueryEscape(tamper(tok)), "", 401},
		{"garbage link", "/jobs/" + j.ID + "/desktop?t=abc", "", 401},
		{"desktop link on jupyter", "/jobs/" + j.ID + "/jupyter/?t=" + url.QueryEscape(tok), "", 401},
		{"websocket without link", "/jobs/" + j.ID + "/desktop/websockify", "", 401},
	}
	for _, c := range cases {
		resp, data := b.get(t, c.path, c.token)
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, data, c.want)
		}
	}
	// Bob cannot get a link to Alice's job; a headless job has no desktop.
	if resp, _ := b.send(t, "POST", "/v1/jobs/"+j.ID+"/desktop/link", b.bob, ""); resp.StatusCode != 404 {
		t.Errorf("bob's link: %d", resp.StatusCode)
	}
	if resp, _ := b.send(t, "POST", "/v1/jobs/"+other.ID+"/desktop/link", b.alice, ""); resp.StatusCode != 409 {
		t.Errorf("headless job's desktop link: %d", resp.StatusCode)
	}
	if resp, data := b.send(t, "POST", "/v1/jobs/"+j.ID+"/desktop/link", b.alice, `{"control": "yes"}`); resp.StatusCode != 400 {
		t.Errorf("bad body: %d %s", resp.StatusCode, data)
	}
	// A link dies with its job.
	b.finish(t, j.ID, drydock.StatusComplete, nil)
	if resp, _ := b.send(t, "POST", "/v1/jobs/"+j.ID+"/desktop/link", b.alice, ""); resp.StatusCode != 409 {
		t.Errorf("link of an ended job: %d", resp.StatusCode)
	}
	if resp, _ := b.get(t, u.RequestURI(), ""); resp.StatusCode != 200 {
		// The page itself is static; its WebSocket is what ends (below).
		t.Errorf("page after the end: %d", resp.StatusCode)
	}
	if resp, _ := b.get(t, "/jobs/"+j.ID+"/desktop/websockify?t="+url.QueryEscape(tok), ""); resp.StatusCode != 409 {
		t.Errorf("websocket of an ended job: %d", resp.StatusCode)
	}
}

func (lb *liveBundle) runningJobNoSandbox(t testing.TB, token string) *drydock.Job {
	return lb.runningJob(t, token, `{"task": "other"}`, nil)
}

// tamper flips the mode inside a link's payload, keeping its signature.
func tamper(tok string) string {
	payload, sig, _ := strings.Cut(tok, ".")
	return strings.TrimSuffix(payload, "Q") + "R." + sig
}

func TestLinksExpireAndAreBoundToTheKey(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, func(c *api.Config) { c.LinkTTL = time.Second })
	sb := &drydock.Sandbox{ID: "sb-exp", State: drydock.SandboxRunning}
	j := b.runningJob(t, b.alice, `{"task": "x", "profile": "desktop"}`, sb)
	l := b.link(t, b.alice, j.ID, "desktop", false)
	u, _ := url.Parse(l.URL)
	time.Sleep(time.Until(l.ExpiresAt) + 50*time.Millisecond)
	if resp, _ := b.get(t, u.RequestURI(), ""); resp.StatusCode != 401 {
		t.Errorf("expired link: %d", resp.StatusCode)
	}
	// A link signed with another key (another server, or a lost key file)
	// is refused.
	other := setupLive(t, false, nil)
	oj := other.runningJob(t, other.alice, `{"task": "x", "profile": "desktop"}`, sb)
	ou, _ := url.Parse(other.link(t, other.alice, oj.ID, "desktop", false).URL)
	fresh := setupLive(t, false, nil)
	fresh.store.CreateJob(t.Context(), &drydock.Job{ID: oj.ID, Status: drydock.StatusPending, CreatedAt: time.Now(), OwnerID: "tok_alice", JobSpec: drydock.JobSpec{Task: "x", Profile: drydock.ProfileDesktop}})
	if resp, _ := fresh.get(t, ou.RequestURI(), ""); resp.StatusCode != 401 {
		t.Errorf("link signed by another key: %d", resp.StatusCode)
	}
	if resp, _ := other.get(t, ou.RequestURI(), ""); resp.StatusCode != 200 {
		t.Errorf("the same link on its own server: %d", resp.StatusCode)
	}
}

func TestJupyterLinkSetsScopedCookie(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	jup := startJupyterStandIn(t)
	j := b.runningJob(t, b.alice, `{"task": "x"}`, jup.sandbox("sb-jcookie"))
	l := b.link(t, b.alice, j.ID, "jupyter", false)
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(l.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || strings.Contains(resp.Header.Get("Location"), "t=") {
		t.Fatalf("link: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var ck *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "drydock_jupyter" {
			ck = c
		}
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/jobs/"+j.ID+"/jupyter/" {
		t.Fatalf("cookie %+v", ck)
	}
	if diff := cmp.Diff(0, len(jup.requests())); diff != "" {
		t.Errorf("the sandbox saw the link request: %s", diff)
	}
}

// jupyterStandIn is a toolboxd that speaks the Jupyter routes the
// orchestrator needs (POST /v1/jupyter/start, /v1/jupyter/proxy/...), with
// an HTTP and WebSocket echo in place of Jupyter.
type jupyterStandIn struct {
	sock    string
	token   string
	release chan struct{} // closed when start may finish
	noRoute bool          // answer like a toolboxd without Jupyter support
	mu      sync.Mutex
	starts  []string
	reqs    []jupyterSeen
}

type jupyterSeen struct {
	Method, Path, Query, Auth, Cookie, Host, Body string
}

func startJupyterStandIn(t testing.TB) *jupyterStandIn {
	t.Helper()
	j := newJupyterStandIn(t)
	j.listen(t)
	return j
}

// newJupyterStandIn makes a stand-in that does not listen yet.
func newJupyterStandIn(t testing.TB) *jupyterStandIn {
	t.Helper()
	dir, err := os.MkdirTemp("", "ddjup")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	j := &jupyterStandIn{sock: filepath.Join(dir, "tb.sock"), token: "tb-jupyter", release: make(chan struct{})}
	close(j.release)
	return j
}

func (j *jupyterStandIn) listen(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("unix", j.sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: j}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
}

func (j *jupyterStandIn) sandbox(id string) *drydock.Sandbox {
	return &drydock.Sandbox{ID: id, State: drydock.SandboxRunning, Token: j.token, Endpoint: drydock.Endpoint{Network: "unix", Address: j.sock}}
}

func (j *jupyterStandIn) requests() []jupyterSeen {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.reqs)
}

func (j *jupyterStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+j.token {
		http.Error(w, `{"error":{"code":"unauthorized","message":"bad token"}}`, 401)
		return
	}
	if j.noRoute {
		w.WriteHeader(404)
		io.WriteString(w, `{"error":{"code":"not_found","message":"no route"}}`)
		return
	}
	switch {
	case r.Method == "POST" && r.URL.Path == "/v1/jupyter/start":
		var req struct {
			BaseURL string `json:"base_url"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		<-j.release
		j.mu.Lock()
		j.starts = append(j.starts, req.BaseURL)
		j.mu.Unlock()
		io.WriteString(w, `{"ready": true}`)
	case strings.HasPrefix(r.URL.Path, "/v1/jupyter/proxy/"):
		body, _ := io.ReadAll(r.Body)
		seen := jupyterSeen{Method: r.Method, Path: strings.TrimPrefix(r.URL.Path, "/v1/jupyter/proxy"), Query: r.URL.RawQuery,
			Auth: r.Header.Get("Authorization"), Cookie: r.Header.Get("Cookie"), Host: r.Host, Body: string(body)}
		j.mu.Lock()
		j.reqs = append(j.reqs, seen)
		j.mu.Unlock()
		if r.Header.Get("Upgrade") != "" {
			c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"v1.kernel.websocket.jupyter.org"}, InsecureSkipVerify: true})
			if err != nil {
				return
			}
			defer c.CloseNow()
			for {
				typ, msg, err := c.Read(context.Background())
				if err != nil {
					return
				}
				if err := c.Write(context.Background(), typ, append([]byte("echo:"), msg...)); err != nil {
					return
				}
			}
		}
		base, _, _ := strings.Cut(seen.Path, "/jupyter/")
		http.SetCookie(w, &http.Cookie{Name: "_xsrf", Value: "x", Path: base + "/jupyter/"})
		http.SetCookie(w, &http.Cookie{Name: "drydock_jupyter", Value: "forged", Path: "/"})
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(seen)
	default:
		http.NotFound(w, r)
	}
}

func TestJupyterProxy(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	jup := startJupyterStandIn(t)
	jup.release = make(chan struct{})
	j := b.runningJob(t, b.alice, `{"task": "x"}`, jup.sandbox("sb-jup"))
	base := "/jobs/" + j.ID + "/jupyter/"

	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	get := func(path, accept string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", b.url+path, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, data
	}
	// Opening the link while Jupyter starts shows a page that reloads.
	l := b.link(t, b.alice, j.ID, "jupyter", false)
	resp, data := get(strings.TrimPrefix(l.URL, b.url), "text/html")
	if resp.StatusCode != 503 || !bytes.Contains(data, []byte("Starting Jupyter")) || resp.Request.URL.Query().Has("t") {
		t.Fatalf("while starting: %d %s (url %s)", resp.StatusCode, data, resp.Request.URL)
	}
	close(jup.release)
	// An API request waits for the start instead.
	resp, data = get(base+"api/status?x=1", "application/json")
	if resp.StatusCode != 200 {
		t.Fatalf("proxied: %d %s", resp.StatusCode, data)
	}
	var seen jupyterSeen
	json.Unmarshal(data, &seen)
	u, _ := url.Parse(b.url)
	want := jupyterSeen{Method: "GET", Path: base + "api/status", Query: "x=1", Auth: "Bearer tb-jupyter", Host: u.Host}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("what the sandbox saw (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{base}, jup.starts); diff != "" {
		t.Errorf("starts (-want +got):\n%s", diff)
	}
	// The sandbox's cookies pass, but it cannot forge the orchestrator's.
	cookies := jar.Cookies(&url.URL{Scheme: "http", Host: u.Host, Path: base})
	var names []string
	for _, c := range cookies {
		names = append(names, c.Name+"="+c.Value)
	}
	if slices.Contains(names, "drydock_jupyter=forged") || !slices.Contains(names, "_xsrf=x") {
		t.Errorf("cookies after the proxy: %v", names)
	}
	// The browser's cookies reach Jupyter without the orchestrator's own.
	resp, data = get(base+"api/contents", "")
	json.Unmarshal(data, &seen)
	if resp.StatusCode != 200 || strings.Contains(seen.Cookie, "drydock") || !strings.Contains(seen.Cookie, "_xsrf=x") {
		t.Errorf("cookies forwarded: %d %q", resp.StatusCode, seen.Cookie)
	}
	// A POST with a body passes as it is.
	req, _ := http.NewRequest("POST", b.url+base+"api/sessions", strings.NewReader(`{"kernel":{}}`))
	req.Header.Set("Authorization", "Bearer "+b.alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&seen)
	resp.Body.Close()
	if resp.StatusCode != 200 || seen.Body != `{"kernel":{}}` || seen.Auth != "Bearer tb-jupyter" {
		t.Errorf("post: %d %+v", resp.StatusCode, seen)
	}
	for _, r := range jup.requests() {
		if strings.Contains(r.Auth+r.Cookie+r.Query, b.alice) || strings.Contains(r.Query, "t=") {
			t.Errorf("the sandbox saw the viewer's credentials: %+v", r)
		}
	}

	// The kernel WebSocket, with Jupyter's subprotocol, through the cookie.
	var cookieHdr []string
	for _, c := range jar.Cookies(&url.URL{Scheme: "http", Host: u.Host, Path: base}) {
		cookieHdr = append(cookieHdr, c.Name+"="+c.Value)
	}
	ws, _, err := websocket.Dial(t.Context(), "ws://"+u.Host+base+"api/kernels/k1/channels", &websocket.DialOptions{
		Subprotocols: []string{"v1.kernel.websocket.jupyter.org"}, HTTPHeader: http.Header{"Cookie": {strings.Join(cookieHdr, "; ")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if ws.Subprotocol() != "v1.kernel.websocket.jupyter.org" {
		t.Errorf("subprotocol %q", ws.Subprotocol())
	}
	ws.Write(t.Context(), websocket.MessageText, []byte("hello"))
	if _, msg, err := ws.Read(t.Context()); err != nil || string(msg) != "echo:hello" {
		t.Fatalf("echo: %q %v", msg, err)
	}
	// The job ends: the proxied WebSocket closes.
	b.finish(t, j.ID, drydock.StatusComplete, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	if _, _, err := ws.Read(ctx); err == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("websocket still open after the job ended: %v", err)
	}
	// And the job's Jupyter is gone for new requests.
	if resp, _ := get(base, ""); resp.StatusCode != 409 {
		t.Errorf("after the end: %d", resp.StatusCode)
	}
}

func TestJupyterProxyAccess(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	jup := startJupyterStandIn(t)
	j := b.runningJob(t, b.alice, `{"task": "x"}`, jup.sandbox("sb-jacc"))
	base := "/jobs/" + j.ID + "/jupyter/"
	for _, c := range []struct {
		token string
		want  int
	}{{"", 401}, {b.bob, 404}, {b.alice, 200}, {b.admin, 200}} {
		if resp, data := b.get(t, base+"api", c.token); resp.StatusCode != c.want {
			t.Errorf("token %q: %d %s, want %d", c.token, resp.StatusCode, data, c.want)
		}
	}
	// A forged session cookie is refused.
	req, _ := http.NewRequest("GET", b.url+base+"api", nil)
	req.AddCookie(&http.Cookie{Name: "drydock_jupyter", Value: "forged.cookie"})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("forged cookie: %d", resp.StatusCode)
	}
}

func TestJupyterProxyWithoutToolboxSupport(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	jup := startJupyterStandIn(t)
	jup.noRoute = true
	j := b.runningJob(t, b.alice, `{"task": "x"}`, jup.sandbox("sb-noroute"))
	resp, data := b.get(t, "/jobs/"+j.ID+"/jupyter/api", b.alice)
	if resp.StatusCode != 501 || errorCode(t, data) != drydock.ENOTIMPLEMENTED {
		t.Errorf("no jupyter in toolboxd: %d %s", resp.StatusCode, data)
	}
}

// A job's link comes as soon as its sandbox exists, which can be before
// toolboxd listens: the start waits for the daemon instead of failing, and
// a page asked for meanwhile reloads itself.
func TestJupyterWaitsForToolboxdToListen(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	jup := newJupyterStandIn(t)
	j := b.runningJob(t, b.alice, `{"task": "x"}`, jup.sandbox("sb-late"))
	base := "/jobs/" + j.ID + "/jupyter/"

	req, _ := http.NewRequest("GET", b.url+base+"tree", nil)
	req.Header.Set("Authorization", "Bearer "+b.alice)
	req.Header.Set("Accept", "text/html")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(page), `http-equiv="refresh"`) {
		t.Fatalf("page before toolboxd listens: %d %s", resp.StatusCode, page)
	}

	time.Sleep(300 * time.Millisecond)
	jup.listen(t)
	resp, data := b.get(t, base+"api/status", b.alice)
	if resp.StatusCode != 200 {
		t.Fatalf("once toolboxd listens: %d %s", resp.StatusCode, data)
	}
	jup.mu.Lock()
	defer jup.mu.Unlock()
	if diff := cmp.Diff([]string{base}, jup.starts); diff != "" {
		t.Errorf("starts (-want +got):\n%s", diff)
	}
}
