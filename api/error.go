package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/drydockhq/drydock"
)

// Codes that only the HTTP layer produces.
const (
	eMethodNotAllowed = "method_not_allowed"
	eUnsupportedMedia = "unsupported_media_type"
)

// statusOf is the one table from error codes to HTTP statuses.
var statusOf = map[string]int{
	drydock.EINVALID:        http.StatusBadRequest,
	drydock.EUNAUTHORIZED:   http.StatusUnauthorized,
	drydock.EFORBIDDEN:      http.StatusForbidden,
	drydock.ENOTFOUND:       http.StatusNotFound,
	eMethodNotAllowed:       http.StatusMethodNotAllowed,
	eMisdirected:            http.StatusMisdirectedRequest,
	drydock.ECONFLICT:       http.StatusConflict,
	drydock.ELEASELOST:      http.StatusConflict,
	drydock.EKEYREUSED:      http.StatusUnprocessableEntity,
	drydock.ETOOLARGE:       http.StatusRequestEntityTooLarge,
	eUnsupportedMedia:       http.StatusUnsupportedMediaType,
	eTooMany:                http.StatusTooManyRequests,
	drydock.EINTERNAL:       http.StatusInternalServerError,
	drydock.ENOTIMPLEMENTED: http.StatusNotImplemented,
	drydock.EUNAVAILABLE:    http.StatusServiceUnavailable,
}

// ErrorBody is the JSON shape of every error answer.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeError answers with err's code and user-facing message. Internal
// details go to the log only.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := drydock.ErrorCode(err)
	status, ok := statusOf[code]
	if !ok {
		status = http.StatusInternalServerError
	}
	if status >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	} else if errors.Is(err, errClientGone) {
		return
	}
	var body ErrorBody
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
			code, msg = eMethodNotAllowed, "method not allowed; allowed: "+h.Get("Allow")
		}
		h.Del("X-Content-Type-Options")
		var body ErrorBody
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
