package drydock

import (
	"errors"
	"fmt"
)

// Error codes. The HTTP layer maps each to one status in a single table
// (api/error.go); everything else only picks a code.
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
)

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
// toolboxd report. Gateway failures and 429 are EUNAVAILABLE, so that
// callers retry them.
func CodeOfStatus(status int) string {
	switch status {
	case 400, 422:
		return EINVALID
	case 401:
		return EUNAUTHORIZED
	case 403:
		return EFORBIDDEN
	case 404:
		return ENOTFOUND
	case 405:
		return "method_not_allowed"
	case 409:
		return ECONFLICT
	case 413:
		return ETOOLARGE
	case 415:
		return "unsupported_media_type"
	case 501:
		return ENOTIMPLEMENTED
	case 429, 502, 503, 504:
		return EUNAVAILABLE
	}
	return EINTERNAL
}
