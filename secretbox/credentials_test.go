package secretbox_test

import (
	"testing"

	"github.com/drydockhq/drydock/secretbox"
)

func TestMaskCredentials(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"key=sk-ant-api03-abcdefghijklmnop", "key=[REDACTED]"},
		{"ghp_abcdefghijklmnopqrstuvwxyz0123456789 and AKIAABCDEFGHIJKLMNOP", "[REDACTED] and [REDACTED]"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nafter", "[REDACTED]\nafter"},
		{"sk-short and ghp_short stay", "sk-short and ghp_short stay"},
		{"", ""},
	} {
		if got := secretbox.MaskCredentials(c.in); got != c.want {
			t.Errorf("MaskCredentials(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}
