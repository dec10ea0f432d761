package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
)

// Revocation must end what a token opened: its event streams,
// its live views, the signed links made for it and the Jupyter cookies made
// from those links. Development mode's anonymous principal is revoked the
// same way by the first token created.

// closeWithin bounds how long a test waits for a revoked connection to
// close. The server checks every 50 ms here; the bound only keeps a broken
// build from hanging, it is not a measurement.
const closeWithin = 15 * time.Second

func fastRevocation(c *api.Config) { c.RevocationCheck = 50 * time.Millisecond }

// sse is an event stream read in the background until the server ends it.
type sse struct {
	done   chan struct{}
	mu     sync.Mutex
	body   bytes.Buffer
	change chan struct{}
}

func (s *sse) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body.Write(p)
	close(s.change)
	s.change = make(chan struct{})
	return len(p), nil
}

func (s *sse) text() (string, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.body.String(), s.change
}

// openSSE opens the event stream of job id with token ("" for none) and
// reads it in the background.
func openSSE(t *testing.T, b *liveBundle, id, token string) *sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", b.url+"/v1/jobs/"+id+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("open the event stream of %s: %d %s", id, resp.StatusCode, data)
	}
	s := &sse{done: make(chan struct{}), change: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		_, _ = io.Copy(s, resp.Body)
	}()
	return s
}

// waitFor waits until the stream has carried substr.
func (s *sse) waitFor(t *testing.T, substr string) {
	t.Helper()
	timeout := time.After(closeWithin)
	for {
		body, changed := s.text()
		if strings.Contains(body, substr) {
			return
		}
		select {
		case <-changed:
		case <-s.done:
			body, _ := s.text()
			if !strings.Contains(body, substr) {
				t.Fatalf("the stream ended without %q:\n%s", substr, body)
			}
			return
		case <-timeout:
			t.Fatalf("no %q on the stream after %s:\n%s", substr, closeWithin, body)
		}
	}
}

// waitClosed waits until the server ends the stream and returns all it sent.
func (s *sse) waitClosed(t *testing.T) string {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(closeWithin):
		body, _ := s.text()
		t.Fatalf("the stream is still open %s later:\n%s", closeWithin, body)
	}
	body, _ := s.text()
	return body
}

func (s *sse) open() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

func logEvent(t *testing.T, b *liveBundle, id, msg string) {
	t.Helper()
	if err := b.store.AppendEvent(t.Context(), drydock.NewEvent(id, drydock.EventLog, map[string]string{"level": "info", "message": msg})); err != nil {
		t.Fatal(err)
	}
}

func TestRevokingATokenEndsItsEventStreams(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, fastRevocation)
	aj := b.runningJob(t, b.alice, `{"task": "a"}`, nil)
	bj := b.runningJob(t, b.bob, `{"task": "b"}`, nil)
	alice := openSSE(t, b, aj.ID, b.alice)
	adminOnAlices := openSSE(t, b, aj.ID, b.admin)
	bob := openSSE(t, b, bj.ID, b.bob)
	alice.waitFor(t, "event: status")

	if err := b.store.RevokeToken(t.Context(), "tok_alice"); err != nil {
		t.Fatal(err)
	}
	body := alice.waitClosed(t)
	if strings.Contains(body, "event: end") {
		t.Errorf("the revoked stream ended as if the job had: %s", body)
	}
	if !strings.Contains(body, ": closed: the token of this stream was revoked") {
		t.Errorf("the revoked stream does not say why it closed: %s", body)
	}
	// The client's reconnection is refused.
	if resp, data := b.get(t, "/v1/jobs/"+aj.ID+"/events?stream=1", b.alice); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("reconnect with the revoked token: %d %s", resp.StatusCode, data)
	}
	// Other tokens' streams, on the same job or another, go on.
	logEvent(t, b, aj.ID, "still-watched-by-admin")
	logEvent(t, b, bj.ID, "still-watched-by-bob")
	adminOnAlices.waitFor(t, "still-watched-by-admin")
	bob.waitFor(t, "still-watched-by-bob")
	if !adminOnAlices.open() || !bob.open() {
		t.Error("a stream of a token that was not revoked closed")
	}
}

func TestFirstTokenEndsAnonymousEventStreams(t *testing.T) {
	t.Parallel()
	b := setupLive(t, true, fastRevocation)
	j := b.runningJob(t, "", `{"task": "a"}`, nil)
	anon := openSSE(t, b, j.ID, "")
	anon.waitFor(t, "event: status")

	_, hash := drydock.NewTokenSecret()
	if err := b.store.CreateToken(t.Context(), &drydock.Token{ID: "tok_first", Name: "first", Admin: true, CreatedAt: time.Now(), Hash: hash}); err != nil {
		t.Fatal(err)
	}
	if body := anon.waitClosed(t); strings.Contains(body, "event: end") {
		t.Errorf("the anonymous stream ended as if the job had: %s", body)
	}
	if resp, data := b.get(t, "/v1/jobs/"+j.ID+"/events?stream=1", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous reconnect after the first token: %d %s", resp.StatusCode, data)
	}
}

// linkPayload decodes the readable half of a signed link or cookie.
func linkPayload(t *testing.T, tok string) map[string]any {
	t.Helper()
	payload, _, _ := strings.Cut(tok, ".")
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		t.Fatalf("link payload %q: %v", payload, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLinksDieWithTheirToken(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	sb := startToolbox(t, "sb-revlink", t.TempDir(), &fakeVNC{w: 8, h: 8})
	j := b.runningJob(t, b.alice, `{"task": "x", "profile": "desktop"}`, sb)
	alices := b.link(t, b.alice, j.ID, "desktop", false)
	admins := b.link(t, b.admin, j.ID, "desktop", true)
	if p := linkPayload(t, mustQuery(t, alices.URL)); p["p"] != "tok_alice" {
		t.Errorf("the link does not name the token it was made for: %v", p)
	}
	page := func(l api.Link) int {
		u, _ := url.Parse(l.URL)
		resp, _ := b.get(t, u.RequestURI(), "")
		return resp.StatusCode
	}
	if page(alices) != 200 || page(admins) != 200 {
		t.Fatal("the links do not work before the revocation")
	}

	if err := b.store.RevokeToken(t.Context(), "tok_alice"); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(alices.URL)
	resp, data := b.get(t, u.RequestURI(), "")
	if resp.StatusCode != http.StatusUnauthorized || !bytes.Contains(data, []byte("revoked")) {
		t.Errorf("the page of a revoked token's link: %d %s; want 401 saying the token was revoked", resp.StatusCode, data)
	}
	ws, _ := url.Parse(alices.WebSocketURL)
	if resp, data := b.get(t, ws.RequestURI(), ""); resp.StatusCode != http.StatusUnauthorized || errorCode(t, data) != drydock.EUNAUTHORIZED {
		t.Errorf("the desktop of a revoked token's link: %d %s; want 401", resp.StatusCode, data)
	}
	// The admin's link to the same job is the admin's, and stands.
	if got := page(admins); got != 200 {
		t.Errorf("the admin's link after alice's revocation: %d", got)
	}
}

func mustQuery(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("t")
}

func TestFirstTokenKillsAnonymousLinks(t *testing.T) {
	t.Parallel()
	b := setupLive(t, true, nil)
	sb := &drydock.Sandbox{ID: "sb-anonlink", State: drydock.SandboxRunning}
	j := b.runningJob(t, "", `{"task": "x", "profile": "desktop"}`, sb)
	l := b.link(t, "", j.ID, "desktop", false)
	if p := linkPayload(t, mustQuery(t, l.URL)); p["p"] != "local" {
		t.Errorf("a development-mode link does not name the local principal: %v", p)
	}
	u, _ := url.Parse(l.URL)
	if resp, _ := b.get(t, u.RequestURI(), ""); resp.StatusCode != 200 {
		t.Fatalf("anonymous link in development mode: %d", resp.StatusCode)
	}
	_, hash := drydock.NewTokenSecret()
	if err := b.store.CreateToken(t.Context(), &drydock.Token{ID: "tok_first", Name: "first", Admin: true, CreatedAt: time.Now(), Hash: hash}); err != nil {
		t.Fatal(err)
	}
	if resp, data := b.get(t, u.RequestURI(), ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous link after the first token: %d %s; want 401", resp.StatusCode, data)
	}
}

// A link that names no principal (made before links did) cannot be
// checked against revocation and is refused.
func TestLinkWithoutPrincipalIsRefused(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	sb := &drydock.Sandbox{ID: "sb-noprincipal", State: drydock.SandboxRunning}
	j := b.runningJob(t, b.alice, `{"task": "x", "profile": "desktop"}`, sb)
	legacy := b.srv.SignLinkForTest(j.ID, "desktop", time.Now().Add(time.Minute), "", 0)
	if resp, data := b.get(t, "/jobs/"+j.ID+"/desktop?t="+url.QueryEscape(legacy), ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a link without a principal: %d %s; want 401", resp.StatusCode, data)
	}
	// The same, naming alice, is accepted: the principal is what differs.
	named := b.srv.SignLinkForTest(j.ID, "desktop", time.Now().Add(time.Minute), "tok_alice", time.Now().Unix())
	if resp, data := b.get(t, "/jobs/"+j.ID+"/desktop?t="+url.QueryEscape(named), ""); resp.StatusCode != 200 {
		t.Errorf("the same link naming alice: %d %s", resp.StatusCode, data)
	}
	// A link naming bob, who cannot see the job, is refused.
	bobs := b.srv.SignLinkForTest(j.ID, "desktop", time.Now().Add(time.Minute), "tok_bob", time.Now().Unix())
	if resp, data := b.get(t, "/jobs/"+j.ID+"/desktop?t="+url.QueryEscape(bobs), ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a link naming a token that cannot see the job: %d %s; want 401", resp.StatusCode, data)
	}
}

func TestDesktopViewClosesWhenItsTokenIsRevoked(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, fastRevocation)
	vnc := &fakeVNC{w: 8, h: 8}
	j, l := desktopJob(t, b, vnc, "sb-revdesk", false)
	byLink, err := dialViewer(t.Context(), l.WebSocketURL, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer byLink.close()
	ws := "ws" + strings.TrimPrefix(b.url, "http") + "/jobs/" + j.ID + "/desktop/websockify"
	byAdmin, err := dialViewer(t.Context(), ws, http.Header{"Authorization": {"Bearer " + b.admin}}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer byAdmin.close()
	if err := byLink.frame(); err != nil {
		t.Fatal(err)
	}

	if err := b.store.RevokeToken(t.Context(), "tok_alice"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), closeWithin)
	defer cancel()
	_, _, err = byLink.c.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusPolicyViolation || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("the link's viewer after its token was revoked: %v; want a close saying access was revoked", err)
	}
	// The admin's own view of the job goes on.
	if err := byAdmin.frame(); err != nil {
		t.Errorf("the admin's view after alice's revocation: %v", err)
	}
}

func TestDesktopBearerViewClosesWhenItsTokenIsRevoked(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, fastRevocation)
	vnc := &fakeVNC{w: 8, h: 8}
	j, _ := desktopJob(t, b, vnc, "sb-revbearer", false)
	ws := "ws" + strings.TrimPrefix(b.url, "http") + "/jobs/" + j.ID + "/desktop/websockify"
	v, err := dialViewer(t.Context(), ws, http.Header{"Authorization": {"Bearer " + b.alice}}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	if err := b.store.RevokeToken(t.Context(), "tok_alice"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), closeWithin)
	defer cancel()
	if _, _, err := v.c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Errorf("a bearer viewer after its token was revoked: %v; want a policy-violation close", err)
	}
}

func TestAnonymousDesktopViewClosesWithTheFirstToken(t *testing.T) {
	t.Parallel()
	b := setupLive(t, true, fastRevocation)
	vnc := &fakeVNC{w: 8, h: 8}
	sb := startToolbox(t, "sb-revanon", t.TempDir(), vnc)
	j := b.runningJob(t, "", `{"task": "x", "profile": "desktop"}`, sb)
	l := b.link(t, "", j.ID, "desktop", false)
	v, err := dialViewer(t.Context(), l.WebSocketURL, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	_, hash := drydock.NewTokenSecret()
	if err := b.store.CreateToken(t.Context(), &drydock.Token{ID: "tok_first", Name: "first", Admin: true, CreatedAt: time.Now(), Hash: hash}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), closeWithin)
	defer cancel()
	if _, _, err := v.c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Errorf("an anonymous viewer after the first token: %v; want a policy-violation close", err)
	}
}

// jupyterSession opens a Jupyter link without following redirects and
// returns the session cookie it left.
func jupyterSession(t *testing.T, b *liveBundle, l api.Link) *http.Cookie {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(l.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == "drydock_jupyter" {
			return c
		}
	}
	t.Fatalf("the Jupyter link left no session cookie: %d", resp.StatusCode)
	return nil
}

func withCookie(t *testing.T, b *liveBundle, method, path string, ck *http.Cookie) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, b.url+path, nil)
	req.AddCookie(ck)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

func TestJupyterCookieDiesWithItsToken(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	jup := startJupyterStandIn(t)
	j := b.runningJob(t, b.alice, `{"task": "x"}`, jup.sandbox("sb-revcookie"))
	base := "/jobs/" + j.ID + "/jupyter/"
	ck := jupyterSession(t, b, b.link(t, b.alice, j.ID, "jupyter", false))
	if resp, data := withCookie(t, b, "GET", base+"api/status", ck); resp.StatusCode != 200 {
		t.Fatalf("the cookie before the revocation: %d %s", resp.StatusCode, data)
	}
	if err := b.store.RevokeToken(t.Context(), "tok_alice"); err != nil {
		t.Fatal(err)
	}
	seen := len(jup.requests())
	resp, data := withCookie(t, b, "GET", base+"api/status", ck)
	if resp.StatusCode != http.StatusUnauthorized || !bytes.Contains(data, []byte("revoked")) {
		t.Errorf("the cookie after its token was revoked: %d %s; want 401 saying so", resp.StatusCode, data)
	}
	if n := len(jup.requests()); n != seen {
		t.Errorf("the sandbox's Jupyter got %d requests of a revoked cookie", n-seen)
	}
}

func TestJupyterCookieCannotBeTradedForALongerOne(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	jup := startJupyterStandIn(t)
	j := b.runningJob(t, b.alice, `{"task": "x"}`, jup.sandbox("sb-trade"))
	l := b.link(t, b.alice, j.ID, "jupyter", false)
	ck := jupyterSession(t, b, l)

	// The cookie's value used as a link.
	base := "/jobs/" + j.ID + "/jupyter/"
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(b.url + base + "?t=" + url.QueryEscape(ck.Value))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the cookie used as a link: %d %s; want 401", resp.StatusCode, data)
	}
	for _, c := range resp.Cookies() {
		if c.Name == "drydock_jupyter" {
			t.Errorf("the cookie was traded for a new one: %+v", c)
		}
	}
	// Its life counts from the link's making, not from its own.
	link, cookie := linkPayload(t, mustQuery(t, l.URL)), linkPayload(t, ck.Value)
	issued, _ := link["i"].(float64)
	expires, _ := cookie["e"].(float64)
	if issued == 0 || expires != issued+(8*time.Hour).Seconds() {
		t.Errorf("the cookie ends at %v; want the link's making (%v) + 8h", expires, issued)
	}
	if ck.MaxAge <= 0 || ck.MaxAge > int((8*time.Hour).Seconds()) {
		t.Errorf("cookie Max-Age %d; want at most 8h", ck.MaxAge)
	}
	// The link used a second time gives a cookie that ends no later.
	again := jupyterSession(t, b, l)
	if e := linkPayload(t, again.Value)["e"]; e != cookie["e"] {
		t.Errorf("a second use of the link gives a cookie ending at %v, the first at %v", e, cookie["e"])
	}
}

func TestJupyterWebSocketClosesWhenItsTokenIsRevoked(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, fastRevocation)
	jup := startJupyterStandIn(t)
	j := b.runningJob(t, b.alice, `{"task": "x"}`, jup.sandbox("sb-revjws"))
	ck := jupyterSession(t, b, b.link(t, b.alice, j.ID, "jupyter", false))
	u, _ := url.Parse(b.url)
	ws, _, err := websocket.Dial(t.Context(), "ws://"+u.Host+"/jobs/"+j.ID+"/jupyter/api/kernels/k1/channels", &websocket.DialOptions{
		Subprotocols: []string{"v1.kernel.websocket.jupyter.org"}, HTTPHeader: http.Header{"Cookie": {ck.String()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.Write(t.Context(), websocket.MessageText, []byte("hello"))
	if _, msg, err := ws.Read(t.Context()); err != nil || string(msg) != "echo:hello" {
		t.Fatalf("echo: %q %v", msg, err)
	}
	if err := b.store.RevokeToken(t.Context(), "tok_alice"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), closeWithin)
	defer cancel()
	if _, _, err := ws.Read(ctx); err == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("the Jupyter WebSocket is still open after its token was revoked: %v", err)
	}
}
