package drydock

import (
	"errors"
	"fmt"
	"net/http"
)

// Error codes: every code any part of Drydock answers with. HTTPStatus
// maps each to one status, for the API and for toolboxd alike; everything
// else only picks a code.
const (
	EINVALID        = "invalid"         // 400: the request is malformed or fails validation
	EUNAUTHORIZED   = "unauthorized"    // 401: no or wrong credentials
	EFORBIDDEN      = "forbidden"       // 403: authenticated but not allowed
	ENOTFOUND       = "not_found"       // 404: no such thing, or not visible to the caller
	ECONFLICT       = "conflict"        // 409: state does not allow the operation
	ETOOLARGE       = "too_large"       // 413: body or value over a limit
	EUNAVAILABLE    = "unavailable"     // 503: a dependency is down; retryable
	ENOTIMPLEMENTED = "not_implemented" // 501: the backend lacks the capability
	EINTERNAL       = "internal"        // 500: a bug or an unexpected failure
	ELEASELOST      = "lease_lost"      // 409: another worker owns the job now
	// EKEYREUSED: a request repeats an idempotency key with a different
	// request (422).
	EKEYREUSED        = "idempotency_key_reused"
	ETOOMANY          = "too_many_requests"      // 429: over a rate or concurrency limit; retry later
	EMETHODNOTALLOWED = "method_not_allowed"     // 405: the route exists, the method does not
	EUNSUPPORTEDMEDIA = "unsupported_media_type" // 415: a body of a type the route does not take
	EMISDIRECTED      = "misdirected_request"    // 421: a Host the server does not answer for
)

// statusOf is the one table from codes to HTTP statuses.
var statusOf = map[string]int{
	EINVALID:          http.StatusBadRequest,
	EUNAUTHORIZED:     http.StatusUnauthorized,
	EFORBIDDEN:        http.StatusForbidden,
	ENOTFOUND:         http.StatusNotFound,
	EMETHODNOTALLOWED: http.StatusMethodNotAllowed,
	EMISDIRECTED:      http.StatusMisdirectedRequest,
	ECONFLICT:         http.StatusConflict,
	ELEASELOST:        http.StatusConflict,
	EKEYREUSED:        http.StatusUnprocessableEntity,
	ETOOLARGE:         http.StatusRequestEntityTooLarge,
	EUNSUPPORTEDMEDIA: http.StatusUnsupportedMediaType,
	ETOOMANY:          http.StatusTooManyRequests,
	EINTERNAL:         http.StatusInternalServerError,
	ENOTIMPLEMENTED:   http.StatusNotImplemented,
	EUNAVAILABLE:      http.StatusServiceUnavailable,
}

// HTTPStatus is the status of an answer carrying code; an unknown code is
// an internal error.
func HTTPStatus(code string) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// ErrorBody is the JSON shape of every error answer, the API's and
// toolboxd's: {"error": {"code": ..., "message": ...}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is a code and a message fit for the caller.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Err turns a decoded error body back into an *Error.
func (d ErrorDetail) Err() *Error { return &Error{Code: d.Code, Message: d.Message} }

// Error is an application error with a code and a message that is safe to show
// to the user. Wrapped errors keep internal details for logs only.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Errorf builds an *Error with a formatted, user-facing message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL for
// any other non-nil error and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the user-facing message of err. Internal errors get a
// generic message so that no detail of the machine leaks to callers.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// IsRetryable reports whether the operation may succeed if tried again.
func IsRetryable(err error) bool {
	switch ErrorCode(err) {
	case EUNAVAILABLE:
		return true
	}
	return false
}

// CodeOfStatus is the error code of an HTTP answer that carries none of its
// own (a proxy's page, an old server): what clients of the API and of
// toolboxd report. It reads statusOf backwards, except where that would
// mislead: a bare 409 is a conflict (not a lost lease), a bare 422 is
// invalid input (not a reused key), and 429 and the gateway failures are
// EUNAVAILABLE, so that callers retry them.
func CodeOfStatus(status int) string {
	switch status {
	case http.StatusConflict:
		return ECONFLICT
	case http.StatusUnprocessableEntity:
		return EINVALID
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return EUNAVAILABLE
	}
	for code, s := range statusOf {
		if s == status {
			return code
		}
	}
	return EINTERNAL
}
