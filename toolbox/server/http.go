package server

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// writeError answers with err's code and user-facing message. Internal errors
// are logged with their detail and answered with a generic message.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code := drydock.ErrorCode(err)
	if code == drydock.EINTERNAL {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path,
			"request_id", r.Header.Get(toolbox.HeaderRequestID), "err", err)
	}
	writeJSON(w, drydock.HTTPStatus(code), drydock.ErrorBody{Error: drydock.ErrorDetail{
		Code: code, Message: drydock.ErrorMessage(err),
	}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own wire types are written, so this is a bug.
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// maxJSONBody bounds request bodies that are JSON; file contents travel as
// raw bodies instead.
const maxJSONBody = 8 << 20

// decodeJSON reads one JSON value from the body, refusing unknown fields so
// that a caller's typo does not silently do something else.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, maxJSONBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return drydock.Errorf(drydock.ETOOLARGE, "request body is over %d bytes", maxJSONBody)
		}
		if errors.Is(err, io.EOF) {
			return drydock.Errorf(drydock.EINVALID, "request body must be a JSON object")
		}
		return drydock.Errorf(drydock.EINVALID, "invalid JSON body: %s", jsonErrorText(err))
	}
	if dec.More() {
		return drydock.Errorf(drydock.EINVALID, "request body must hold one JSON value")
	}
	return nil
}

func jsonErrorText(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "json: ")
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return msg
}

func hashToken(tok string) [32]byte {
	return sha256.Sum256([]byte(tok))
}

// authorized checks the bearer token against the current one (see Claim).
func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.Token == "" {
		return false
	}
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return s.tokenMatches(strings.TrimSpace(tok))
}

// queryBool reads a boolean query parameter; absent means def.
func queryBool(r *http.Request, name string, def bool) (bool, error) {
	v := r.URL.Query().Get(name)
	switch strings.ToLower(v) {
	case "":
		return def, nil
	case "1", "true", "yes":
		return true, nil
	case "0", "false", "no":
		return false, nil
	}
	return false, drydock.Errorf(drydock.EINVALID, "%s must be true or false", name)
}
