package drydock_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

// The operator's lists are checked when the server starts: both must
// parse, and the default must be something the ceiling allows.
func TestNewEgressPolicy(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		def, ceiling []string
		want         string // "" for no error
	}{
		{nil, nil, ""},
		{[]string{"registry.example.com:443"}, nil, ""},
		{[]string{"registry.example.com:443"}, []string{"*.example.com"}, ""},
		{[]string{"10.1.2.3:443"}, []string{"10.0.0.0/8:443"}, ""},
		{[]string{"bad host"}, nil, "default: egress destination"},
		{nil, []string{"x:0"}, "ceiling: egress destination"},
		{[]string{"registry.example.com"}, []string{"registry.example.com:443"}, "default: registry.example.com is outside the ceiling registry.example.com:443"},
		{[]string{"example.com"}, []string{"*.example.com"}, "default: example.com is outside the ceiling"},
	} {
		_, err := drydock.NewEgressPolicy(tt.def, tt.ceiling)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("NewEgressPolicy(%q, %q): %v", tt.def, tt.ceiling, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("NewEgressPolicy(%q, %q) = %v; want an error saying %q", tt.def, tt.ceiling, err, tt.want)
		}
	}
}

// A job that gives no list gets the default (a copy, in canonical form);
// a job that gives one, even an empty one, keeps its own.
func TestEgressPolicyResolve(t *testing.T) {
	t.Parallel()
	p, err := drydock.NewEgressPolicy([]string{" Registry.Example.com:443 "}, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, src, err := p.Resolve(nil)
	if err != nil || src != drydock.EgressFromDefault || !slices.Equal(list, []string{"registry.example.com:443"}) {
		t.Errorf("Resolve(nil) = %q, %q, %v; want the default", list, src, err)
	}
	list[0] = "changed"
	if p.Default[0] != "registry.example.com:443" {
		t.Errorf("changing a job's list changed the default: %q", p.Default)
	}
	list, src, err = p.Resolve([]string{})
	if err != nil || src != drydock.EgressFromJob || list == nil || len(list) != 0 {
		t.Errorf("Resolve([]) = %q, %q, %v; want the job's empty list", list, src, err)
	}
	// Without a ceiling a job may widen beyond the default.
	list, src, err = p.Resolve([]string{"other.example.org"})
	if err != nil || src != drydock.EgressFromJob || !slices.Equal(list, []string{"other.example.org"}) {
		t.Errorf("Resolve(wider) = %q, %q, %v; want the job's own list", list, src, err)
	}
}

// With a ceiling, a job's list may narrow or widen the default, entry by
// entry within the ceiling; anything beyond is forbidden, naming the entry.
func TestEgressPolicyCeiling(t *testing.T) {
	t.Parallel()
	p, err := drydock.NewEgressPolicy([]string{"registry.example.com:443"}, []string{"*.example.com", "git.example.org:443", "10.1.0.0/16", "[fd00::/64]:8443"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		list []string
		ok   bool
	}{
		{[]string{}, true},
		{[]string{"registry.example.com:443"}, true},
		{[]string{"registry.example.com"}, true}, // any port: the ceiling's entry has none
		{[]string{"a.b.example.com:8080", "*.example.com", "*.x.example.com:443"}, true},
		{[]string{"git.example.org:443"}, true},
		{[]string{"10.1.2.3", "10.1.128.0/17:22"}, true},
		{[]string{"[fd00::1]:8443"}, true},
		{[]string{"example.com"}, false},     // "*.example.com" does not admit the bare name
		{[]string{"badexample.com"}, false},  // nor a name that only ends alike
		{[]string{"git.example.org"}, false}, // any port is more than port 443
		{[]string{"git.example.org:22"}, false},
		{[]string{"10.0.0.0/8"}, false}, // wider than the /16
		{[]string{"10.2.0.1"}, false},
		{[]string{"[fd00::1]"}, false}, // any port is more than 8443
		{[]string{"*.com"}, false},
		{[]string{"registry.example.com", "evil.example.net"}, false},
	} {
		err := p.Check(tt.list)
		if tt.ok && err != nil {
			t.Errorf("Check(%q): %v; want allowed", tt.list, err)
		}
		if !tt.ok && drydock.ErrorCode(err) != drydock.EFORBIDDEN {
			t.Errorf("Check(%q) = %v; want EFORBIDDEN", tt.list, err)
		}
	}
	err = p.Check([]string{"registry.example.com", "evil.example.net:443"})
	if msg := drydock.ErrorMessage(err); !strings.Contains(msg, "evil.example.net:443 is outside") || !strings.Contains(msg, "--egress-allow") {
		t.Errorf("refusal says %q; want it to name the entry and the flag", msg)
	}
	if _, _, err := p.Resolve([]string{"evil.example.net"}); drydock.ErrorCode(err) != drydock.EFORBIDDEN {
		t.Errorf("Resolve beyond the ceiling = %v; want EFORBIDDEN", err)
	}
	if !p.Allows("a.example.com", 1) || p.Allows("evil.example.net", 443) || p.Allows("10.2.0.1", 80) {
		t.Error("Allows disagrees with the ceiling")
	}
	if !(drydock.EgressPolicy{}).Allows("anything.example.net", 1) {
		t.Error("a policy without a ceiling refused a destination")
	}
}
