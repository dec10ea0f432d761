package clienttest

import (
	"net/http"
	"strings"

	"github.com/drydockhq/drydock"
)

// trajectory is GET /v1/jobs/{id}/trajectory: the job with its links and
// its whole event log, in the format replay reads.
func (s *Server) trajectory(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.lookup(w, r)
	if !ok {
		return
	}
	events := s.events[j.ID]
	if events == nil {
		events = []*drydock.Event{}
	}
	w.Header().Set("Content-Disposition", `attachment; filename="`+j.ID+`.trajectory.json"`)
	writeJSON(w, http.StatusOK, drydock.Trajectory{Format: drydock.TrajectoryFormat, Job: s.view(j), Events: events})
}

// muxErrors turns the plain-text 404 and 405 answers of http.ServeMux into
// the API's JSON error shape, as the real server does; handlers' own
// answers pass untouched.
type muxErrors struct {
	http.ResponseWriter
	swallow bool
}

func (w *muxErrors) WriteHeader(status int) {
	h := w.Header()
	if (status == http.StatusNotFound || status == http.StatusMethodNotAllowed) && h.Get("Content-Type") == "text/plain; charset=utf-8" {
		code, msg := drydock.ENOTFOUND, "no such route; see /openapi.json"
		if status == http.StatusMethodNotAllowed {
			code, msg = drydock.EMETHODNOTALLOWED, "method not allowed; allowed: "+h.Get("Allow")
		}
		h.Del("X-Content-Type-Options")
		writeError(w.ResponseWriter, drydock.Errorf(code, "%s", msg))
		w.swallow = true
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *muxErrors) Write(b []byte) (int, error) {
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

func (w *muxErrors) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// jsonMuxErrors serves next with muxErrors.
func jsonMuxErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&muxErrors{ResponseWriter: w}, r)
	})
}

// onlyParams refuses a query parameter outside accepted, as the real
// server's routes do.
func onlyParams(w http.ResponseWriter, r *http.Request, accepted ...string) bool {
	for k := range r.URL.Query() {
		known := false
		for _, a := range accepted {
			known = known || k == a
		}
		if !known {
			writeError(w, drydock.Errorf(drydock.EINVALID, "unknown query parameter %q; accepted: %s", k, strings.Join(accepted, ", ")))
			return false
		}
	}
	return true
}
