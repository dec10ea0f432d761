package drydock

import "testing"

// Answers without an error body map to the codes the API itself would have
// used for those statuses, and gateway failures stay retryable.
func TestCodeOfStatus(t *testing.T) {
	for status, want := range map[int]string{
		400: EINVALID, 422: EINVALID, 401: EUNAUTHORIZED, 403: EFORBIDDEN, 404: ENOTFOUND,
		405: "method_not_allowed", 409: ECONFLICT, 413: ETOOLARGE, 415: "unsupported_media_type",
		501: ENOTIMPLEMENTED, 429: EUNAVAILABLE, 502: EUNAVAILABLE, 503: EUNAVAILABLE, 504: EUNAVAILABLE,
		500: EINTERNAL, 418: EINTERNAL,
	} {
		if got := CodeOfStatus(status); got != want {
			t.Errorf("CodeOfStatus(%d) = %q; want %q", status, got, want)
		}
	}
}
