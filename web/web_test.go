package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drydockhq/drydock/web"
)

func TestAssets(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"app.js", "api.js", "job.js", "jobs.js", "files.js", "timeline.js", "desktop.js",
		"desktop-view.js", "diff.js", "messages.js", "evals.js", "util.js", "style.css", "novnc/core/rfb.js", "novnc/vendor/pako/lib/zlib/inflate.js",
		"novnc/LICENSE.txt", "novnc/docs/LICENSE.MPL-2.0", "novnc/SOURCE.md"} {
		if !web.Has(name) {
			t.Errorf("%s is not embedded", name)
		}
	}
	cases := []struct {
		name, ctype string
		status      int
	}{
		{"app.js", "text/javascript; charset=utf-8", 200},
		{"style.css", "text/css; charset=utf-8", 200},
		{"novnc/SOURCE.md", "text/plain; charset=utf-8", 200},
		{"index.html", "", 404}, // pages go out with their policy only
		{"nope.js", "", 404},
	}
	for _, c := range cases {
		w := httptest.NewRecorder()
		web.ServeAsset(w, httptest.NewRequest("GET", "/ui/"+c.name, nil), c.name)
		if w.Code != c.status || (c.ctype != "" && w.Header().Get("Content-Type") != c.ctype) {
			t.Errorf("%s: %d %q", c.name, w.Code, w.Header().Get("Content-Type"))
		}
	}
}

func TestPagePolicy(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	web.ServePage(w, httptest.NewRequest("GET", "/", nil), web.IndexPage, "ws://live.example:8080 http://live.example:8080", "x; script-src *")
	csp := w.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "connect-src 'self' ws://live.example:8080 http://live.example:8080;") {
		t.Errorf("connect-src not extended: %q", csp)
	}
	if strings.Contains(csp, "script-src *") || strings.Contains(csp, "'unsafe-inline'") || strings.Contains(csp, "'unsafe-eval'") {
		t.Errorf("policy %q lets in more than this origin's scripts", csp)
	}
	if w.Header().Get("X-Frame-Options") != "DENY" {
		t.Error("pages may be framed")
	}
}

// The API server mounts the UI like this; every page is the same document,
// whose script picks the view from the URL.
func Example() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { web.ServePage(w, r, web.IndexPage) })
	mux.HandleFunc("GET /ui/{path...}", func(w http.ResponseWriter, r *http.Request) { web.ServeAsset(w, r, r.PathValue("path")) })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		panic(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Header.Get("Content-Type"), strings.Contains(string(page), `<script type="module" src="/ui/app.js">`))
	// Output: text/html; charset=utf-8 true
}
