package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequest sends requests of any method, target and Authorization header
// to a server that has tokens (not development mode). Whatever they hold,
// the answer is never a 5xx, and a route that needs credentials never
// answers below 400: without a valid token (the fuzzer cannot know one)
// nothing gets past authentication. Routes are classified from
// openapi.json, independently of the server's own mux.
func FuzzRequest(f *testing.F) {
	seeds := []struct{ method, target, auth string }{
		{"GET", "/v1/jobs", ""},
		{"GET", "/v1/jobs", "Bearer ddk_x"},
		{"POST", "/v1/jobs", "Bearer "},
		{"GET", "/v1/jobs/00000000-0000-0000-0000-000000000000/events?stream=1", "bearer ddk_x"},
		{"GET", "/status/..%2f..%2fhealthz", ""},
		{"GET", "/v1/jobs/x/../../healthz", ""},
		{"GET", "/jobs/01900000-0000-7000-8000-000000000000/desktop/websockify?t=abc.def", ""},
		{"DELETE", "/jobs/01900000-0000-7000-8000-000000000000/jupyter/api?t=", "Basic YTpi"},
		{"GET", "/ui/../../../etc/passwd", ""},
		{"GET", "/ui/%2e%2e/web.go", ""},
		{"HEAD", "/metrics", ""},
		{"OPTIONS", "*", ""},
		{"GET", "//v1//jobs", "Bearer\tddk_x"},
		{"PROPFIND", "/v1/jobs/%00", "Bearer \x00"},
		{"GET", "/v1/jobs/00000000-0000-0000-0000-000000000000/diff?x=%ff", "Bearer ddk_x"},
		{"POST", "/v1/jobs/01900000-0000-7000-8000-000000000000/messages", "Bearer ddk_x"},
	}
	for _, s := range seeds {
		f.Add(s.method, s.target, s.auth)
	}
	b := setupLive(f, false, nil)
	classes := http.NewServeMux()
	for _, r := range documentedRoutes(f, b.bundle) {
		class := "protected"
		if r.public() {
			class = "public"
		}
		classes.Handle(r.method+" "+r.path, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-Class", class)
		}))
	}
	f.Fuzz(func(t *testing.T, method, target, auth string) {
		req, err := http.NewRequest(method, "http://drydock.test"+target, nil)
		if err != nil || req.URL.Host != "drydock.test" {
			return // not a request a client could send
		}
		req.RequestURI = target
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		b.srv.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q (Authorization %q): %d %s", method, target, auth, rec.Code, rec.Body)
		}
		cr := httptest.NewRecorder()
		classes.ServeHTTP(cr, req)
		if cr.Header().Get("X-Class") == "protected" && rec.Code < 400 {
			t.Fatalf("%s %q (Authorization %q) got past authentication: %d %s", method, target, auth, rec.Code, strings.TrimSpace(rec.Body.String()))
		}
	})
}
