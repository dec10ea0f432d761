package drydock_test

import (
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

func TestSandboxSecrets(t *testing.T) {
	t.Parallel()
	if got := drydock.RandomHex(8); len(got) != 16 || strings.Trim(got, "0123456789abcdef") != "" {
		t.Errorf("RandomHex(8) = %q", got)
	}
	a, b := drydock.NewSandboxToken(), drydock.NewSandboxToken()
	if len(a) != 43 || a == b {
		t.Errorf("tokens %q, %q: want 43 characters (256 bits), distinct", a, b)
	}
	seen := map[string]bool{}
	for range 100 {
		p := drydock.NewVNCPassword()
		if len(p) != 8 || strings.ContainsAny(p, "lIO01") {
			t.Fatalf("VNC password %q: want 8 characters without look-alikes", p)
		}
		seen[p] = true
	}
	if len(seen) < 99 {
		t.Errorf("only %d distinct VNC passwords in 100", len(seen))
	}
}
