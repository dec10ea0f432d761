package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/drydockhq/drydock"
)

// writeError answers with err's code and user-facing message. Internal
// details go to the log only.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := drydock.ErrorCode(err)
	status := drydock.HTTPStatus(code)
	if status >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	} else if errors.Is(err, errClientGone) {
		return
	}
	var body drydock.ErrorBody
	body.Error.Code = code
	body.Error.Message = drydock.ErrorMessage(err)
	writeJSON(w, status, body)
}

var errClientGone = errors.New("client went away")

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		slog.Debug("write json answer", "err", err)
	}
}

// jsonMuxErrors turns the plain-text 404 and 405 answers of http.ServeMux
// into the API's JSON error shape; handlers' own answers pass untouched.
type jsonMuxErrors struct {
	http.ResponseWriter
	swallow bool
}

func (w *jsonMuxErrors) WriteHeader(status int) {
	h := w.Header()
	if (status == http.StatusNotFound || status == http.StatusMethodNotAllowed) &&
		h.Get("Content-Type") == "text/plain; charset=utf-8" {
		code, msg := drydock.ENOTFOUND, "no such route; see /openapi.json"
		if status == http.StatusMethodNotAllowed {
			code, msg = drydock.EMETHODNOTALLOWED, "method not allowed; allowed: "+h.Get("Allow")
		}
		h.Del("X-Content-Type-Options")
		var body drydock.ErrorBody
		body.Error.Code, body.Error.Message = code, msg
		writeJSON(w.ResponseWriter, status, body)
		w.swallow = true
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *jsonMuxErrors) Write(b []byte) (int, error) {
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

func (w *jsonMuxErrors) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *jsonMuxErrors) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
