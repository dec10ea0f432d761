package api

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A route opts in to multipart bodies (uploads) by naming the media type;
// JSON routes keep refusing them.
func TestRouteCanOptInToMultipartBodies(t *testing.T) {
	t.Parallel()
	s := &Server{log: slog.New(slog.DiscardHandler)}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	upload := s.checkBody([]string{mediaJSON, mediaMultipart}, ok)
	jsonOnly := s.checkBody(jsonBodies, ok)
	for _, tc := range []struct {
		name string
		h    http.Handler
		ct   string
		want int
	}{
		{"upload route, multipart", upload, "multipart/form-data; boundary=x", http.StatusNoContent},
		{"upload route, JSON", upload, "application/json", http.StatusNoContent},
		{"upload route, text", upload, "text/plain", http.StatusUnsupportedMediaType},
		{"upload route, other multipart", upload, "multipart/mixed; boundary=x", http.StatusUnsupportedMediaType},
		{"JSON route, multipart", jsonOnly, "multipart/form-data; boundary=x", http.StatusUnsupportedMediaType},
	} {
		req := httptest.NewRequest("POST", "/x", strings.NewReader("--x--\r\n"))
		req.Header.Set("Content-Type", tc.ct)
		rec := httptest.NewRecorder()
		tc.h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, rec.Code, rec.Body, tc.want)
		}
	}
}
