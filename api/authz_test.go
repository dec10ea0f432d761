package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

// documentedRoute is one operation of openapi.json with its security
// schemes ("" when it needs none).
type documentedRoute struct {
	method, path string
	schemes      []string
}

func (r documentedRoute) public() bool { return len(r.schemes) == 0 }

func (r documentedRoute) String() string { return r.method + " " + r.path }

// documentedRoutes reads every operation of the served OpenAPI document, so
// that a route added there (and TestOpenAPICoversRoutes makes sure every
// served route is) cannot escape the tests that iterate over them.
func documentedRoutes(t testing.TB, b *bundle) []documentedRoute {
	t.Helper()
	req, _ := http.NewRequest("GET", b.url+"/openapi.json", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Security []map[string][]string                 `json:"security"`
		Paths    map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	var out []documentedRoute
	for p, ops := range doc.Paths {
		for m, raw := range ops {
			if !slices.Contains([]string{"get", "post", "put", "patch", "delete", "head"}, m) {
				continue
			}
			var op struct {
				Security *[]map[string][]string `json:"security"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			sec := doc.Security
			if op.Security != nil {
				sec = *op.Security
			}
			r := documentedRoute{method: strings.ToUpper(m), path: p}
			for _, alt := range sec {
				for name := range alt {
					r.schemes = append(r.schemes, name)
				}
			}
			sort.Strings(r.schemes)
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// concrete fills a route's wildcards: {id} with the job id, {path...} with
// a UI asset or a workspace path, {$} with nothing.
func concrete(pattern, id string) string {
	p := strings.ReplaceAll(pattern, "{id}", id)
	p = strings.ReplaceAll(p, "/ui/{path...}", "/ui/app.js")
	p = strings.ReplaceAll(p, "{path...}", "notes/a.md")
	return strings.ReplaceAll(p, "{$}", "")
}

// TestAuthMatrix sends every documented operation as nobody, with broken
// and unknown tokens, as another user, as the owner and as an admin:
//
//   - no token, a malformed header, an unknown token: 401 with
//     WWW-Authenticate on every route that names a security scheme;
//   - another user's job: 404, as for a job that does not exist;
//   - the owner and admins get past authorization (no 401/403/404);
//   - public routes answer without a token.
//
// Drydock has no admin-only route: admins differ only in seeing every job.
// A new one would fail the owner row here (403) until it is given its own
// row.
func TestAuthMatrix(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	routes := documentedRoutes(t, b.bundle)
	if len(routes) < 20 {
		t.Fatalf("only %d documented routes", len(routes))
	}
	known := []string{"bearer", "link", "jupyterSession"}
	for _, r := range routes {
		for _, s := range r.schemes {
			if !slices.Contains(known, s) {
				t.Fatalf("%s uses security scheme %q this test does not know: extend it", r, s)
			}
		}
		if !r.public() && !slices.Contains(r.schemes, "bearer") {
			t.Fatalf("%s cannot be used with an API token: extend this test", r)
		}
	}
	const unknownJob = "01900000-0000-7000-8000-000000000000"
	// A running job of alice's per route (cancel ends one), made before
	// any request creates jobs; without a sandbox, so live routes stop
	// right after authorization.
	jobs := map[string]*drydock.Job{}
	for _, r := range routes {
		jobs[r.String()] = b.runningJobNoSandbox(t, b.alice)
	}
	for _, r := range routes {
		t.Run(r.String(), func(t *testing.T) {
			job := jobs[r.String()]
			path := concrete(r.path, job.ID)
			body := ""
			if r.method == "POST" && !strings.Contains(r.path, "{id}") {
				body = `{"task": "authz"}`
			}
			type row struct {
				who, header string
				want        func(int) bool
				wantText    string
			}
			unauth := func(c int) bool { return c == http.StatusUnauthorized }
			// Past authorization a route may still refuse (409: no
			// desktop; 503: no sandbox yet), but not as if the caller
			// were unknown or the job were not theirs.
			authorized := func(c int) bool {
				return c != http.StatusUnauthorized && c != http.StatusForbidden && c != http.StatusNotFound && c != http.StatusInternalServerError
			}
			var rows []row
			if r.public() {
				rows = []row{{"nobody", "", func(c int) bool { return c >= 200 && c < 400 }, "2xx/3xx"}}
			} else {
				rows = []row{
					{"nobody", "", unauth, "401"},
					{"malformed header", "Basic YWxpY2U6cHc=", unauth, "401"},
					{"empty bearer", "Bearer ", unauth, "401"},
					{"unknown token", "Bearer ddk_" + strings.Repeat("A", 43), unauth, "401"},
					{"owner", "Bearer " + b.alice, authorized, "past authorization"},
					{"admin", "Bearer " + b.admin, authorized, "past authorization"},
				}
				if strings.Contains(r.path, "{id}") {
					notFound := func(c int) bool { return c == http.StatusNotFound }
					rows = append(rows, row{"another user", "Bearer " + b.bob, notFound, "404"})
					// An unknown job answers the same as another's, so
					// ids cannot be probed.
					rows = append(rows, row{"admin, unknown job", "Bearer " + b.admin, notFound, "404"})
				} else {
					rows = append(rows, row{"another user", "Bearer " + b.bob, authorized, "past authorization"})
				}
			}
			for _, rw := range rows {
				p := path
				if rw.who == "admin, unknown job" {
					p = concrete(r.path, unknownJob)
				}
				req, _ := http.NewRequestWithContext(t.Context(), r.method, b.url+p, strings.NewReader(body))
				if rw.header != "" {
					req.Header.Set("Authorization", rw.header)
				}
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				// Not a browser: errors come as JSON even on page routes.
				req.Header.Set("Accept", "application/json")
				resp, err := noRedirect.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var data strings.Builder
				buf := make([]byte, 4096)
				n, _ := resp.Body.Read(buf) // streams: the first bytes are enough
				data.Write(buf[:n])
				resp.Body.Close()
				if !rw.want(resp.StatusCode) {
					t.Errorf("%s: %d, want %s: %s", rw.who, resp.StatusCode, rw.wantText, data.String())
				}
				if resp.StatusCode == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("%s: 401 without a Bearer WWW-Authenticate challenge", rw.who)
				}
				if rw.who == "another user" && strings.Contains(data.String(), job.Task) && job.Task != "" {
					t.Errorf("another user's answer shows the job: %s", data.String())
				}
			}
		})
	}
	// Lists show a user only their own jobs; admins see everyone's.
	aliceJob := jobs[routes[0].String()].ID
	for _, c := range []struct {
		who, token string
		sees       bool
	}{{"bob", b.bob, false}, {"alice", b.alice, true}, {"admin", b.admin, true}} {
		_, data := b.get(t, "/v1/jobs?limit=500", c.token)
		var page struct{ Jobs []*drydock.Job }
		if err := json.Unmarshal(data, &page); err != nil {
			t.Fatal(err)
		}
		sees := slices.ContainsFunc(page.Jobs, func(j *drydock.Job) bool { return j.ID == aliceJob })
		if sees != c.sees {
			t.Errorf("list as %s shows alice's job: %v", c.who, sees)
		}
	}
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
