package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/drydockhq/drydock"
)

// Vendor names a provider for error messages: what it is called and which
// environment variables configure it.
type Vendor struct {
	Name       string // "OpenAI"
	KeyEnv     string // "OPENAI_API_KEY"
	BaseURLEnv string // "OPENAI_BASE_URL"
}

// APIError turns an error answer of the provider's API (after the SDK's
// retries) into a *drydock.Error whose message says what happened and what
// to do. The provider's own message is kept for the statuses where it helps
// (400: why the request was refused; 404: which model) and dropped where it
// could echo credentials (401, 403).
func (v Vendor) APIError(status int, body string, cause error) error {
	detail := apiMessage(body)
	var e *drydock.Error
	switch {
	case status == http.StatusUnauthorized:
		e = drydock.Errorf(drydock.EUNAUTHORIZED, "the %s API rejected the credentials (401 Unauthorized): check %s", v.Name, v.KeyEnv)
	case status == http.StatusForbidden:
		e = drydock.Errorf(drydock.EFORBIDDEN, "the %s API refused the request (403 Forbidden): the key in %s lacks permission for this model or request", v.Name, v.KeyEnv)
	case status == http.StatusNotFound:
		e = drydock.Errorf(drydock.EINVALID, "the %s API answered 404 Not Found (wrong model name or base URL?)%s", v.Name, suffix(detail))
	case status == http.StatusTooManyRequests:
		e = drydock.Errorf(drydock.EUNAVAILABLE, "the %s API kept rate-limiting the requests (429) after retries%s", v.Name, suffix(detail))
	case status >= 500:
		e = drydock.Errorf(drydock.EUNAVAILABLE, "the %s API kept failing (%d %s) after retries%s", v.Name, status, http.StatusText(status), suffix(detail))
	case status == http.StatusRequestEntityTooLarge:
		e = drydock.Errorf(drydock.ETOOLARGE, "the %s API refused the request as too large (413)%s", v.Name, suffix(detail))
	default:
		e = drydock.Errorf(drydock.EINVALID, "the %s API refused the request (%d %s)%s", v.Name, status, http.StatusText(status), suffix(detail))
	}
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		// The SDK's error text carries the answer's body, which for these
		// statuses may quote part of the key.
		return e
	}
	return fmt.Errorf("%w: %w", e, cause)
}

// TransportError turns a failure without an answer (connection refused or
// dropped, timeout) into an EUNAVAILABLE error; a context error of the
// caller is returned as it is, so cancellation stays cancellation.
func (v Vendor) TransportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	what := "could not be reached"
	if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "Timeout") {
		what = "timed out"
	}
	return fmt.Errorf("%w: %w", drydock.Errorf(drydock.EUNAVAILABLE, "the %s API %s after retries (check %s and the network)", v.Name, what, v.BaseURLEnv), err)
}

// NoCredentials is the error of a provider that has neither a key nor a
// base URL to talk to.
func (v Vendor) NoCredentials() error {
	return drydock.Errorf(drydock.EINVALID, "no %s credentials: set %s (and %s for an OpenAI-compatible or proxy server)", v.Name, v.KeyEnv, v.BaseURLEnv)
}

func suffix(detail string) string {
	if detail == "" {
		return ""
	}
	return ": " + detail
}

// maxDetail bounds how much of a provider's message reaches a job's error.
const maxDetail = 300

var keyLike = regexp.MustCompile(`\b(sk-[A-Za-z0-9_\-*.]{8,}|ddk_[A-Za-z0-9_\-]{8,})`)

// apiMessage extracts the human message of an error body: {"error":
// {"message"}} (both APIs), {"message"} or {"error": "..."}, else the text.
func apiMessage(body string) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	msg := ""
	if json.Unmarshal([]byte(body), &v) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			msg = inner.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			msg = s
		default:
			msg = v.Message
		}
	} else {
		msg = body
	}
	msg = strings.Join(strings.Fields(msg), " ")
	msg = keyLike.ReplaceAllString(msg, "[REDACTED]")
	if len(msg) > maxDetail {
		msg = msg[:maxDetail] + "..."
	}
	return msg
}
