package drydock_test

import (
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

func TestValidateMessageText(t *testing.T) {
	for _, c := range []struct {
		text string
		code string
	}{
		{"use Postgres, not SQLite", ""},
		{strings.Repeat("x", drydock.MaxMessageBytes), ""},
		{"", drydock.EINVALID},
		{" \n\t", drydock.EINVALID},
		{strings.Repeat("x", drydock.MaxMessageBytes+1), drydock.ETOOLARGE},
		{"a\x00b", drydock.EINVALID},
		{"\xff", drydock.EINVALID},
	} {
		if got := drydock.ErrorCode(drydock.ValidateMessageText(c.text)); got != c.code {
			t.Errorf("ValidateMessageText(%.20q) = %q; want %q", c.text, got, c.code)
		}
	}
}
