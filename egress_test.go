package drydock_test

import (
	"testing"

	"github.com/drydockhq/drydock"
)

func TestParseEgressRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"pypi.example.com", "pypi.example.com"},
		{" PyPI.example.com.:443 ", "pypi.example.com:443"},
		{"*.npm.example.com:443", "*.npm.example.com:443"},
		{"127.0.0.1:8081", "127.0.0.1:8081"},
		{"10.0.0.0/8", "10.0.0.0/8"},
		{"[::1]:80", "[::1]:80"},
		{"::1", "::1"},
	}
	for _, tt := range tests {
		r, err := drydock.ParseEgressRule(tt.in)
		if err != nil {
			t.Errorf("ParseEgressRule(%q): %v", tt.in, err)
			continue
		}
		if r.String() != tt.want {
			t.Errorf("ParseEgressRule(%q) = %q; want %q", tt.in, r, tt.want)
		}
	}
	for _, bad := range []string{"", "  ", "host:0", "host:65536", "host:http", "a b.com", "-x.com", "exa mple", "::1:80:x", "http://x.com", "x..com", "*.", "*"} {
		if _, err := drydock.ParseEgressRule(bad); drydock.ErrorCode(err) != drydock.EINVALID {
			t.Errorf("ParseEgressRule(%q) = %v; want EINVALID", bad, err)
		}
	}
}

func TestEgressRuleAllows(t *testing.T) {
	t.Parallel()
	rules, err := drydock.ParseEgress([]string{"pypi.example.com:443", "*.npm.example.com", "127.0.0.1:8081", "10.1.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		port int
		want bool
	}{
		{"pypi.example.com", 443, true},
		{"PYPI.EXAMPLE.COM.", 443, true},
		{"pypi.example.com", 80, false},
		{"files.pypi.example.com", 443, false},
		{"registry.npm.example.com", 8443, true},
		{"npm.example.com", 443, false},     // the wildcard covers subdomains only
		{"evilnpm.example.com", 443, false}, // not a subdomain
		{"127.0.0.1", 8081, true},
		{"127.0.0.1", 8080, false},
		{"localhost", 8081, false}, // a name never matches an address rule
		{"10.1.200.3", 22, true},
		{"10.2.0.1", 22, false},
		{"[::ffff:127.0.0.1]", 8081, true},
	}
	for _, tt := range tests {
		if got := drydock.EgressAllows(rules, tt.host, tt.port); got != tt.want {
			t.Errorf("allows %s:%d = %v; want %v", tt.host, tt.port, got, tt.want)
		}
	}
	if drydock.EgressAllows(nil, "pypi.example.com", 443) {
		t.Error("an empty allowlist allowed a destination")
	}
}

func TestJobSpecValidatesBudgetAndEgress(t *testing.T) {
	t.Parallel()
	for _, s := range []drydock.JobSpec{
		{Task: "t", ContextBudget: 10},
		{Task: "t", ContextBudget: 2_000_000},
		{Task: "t", Egress: []string{"ok.com", "bad host"}},
		{Task: "t", Egress: make([]string, drydock.MaxEgressRules+1)},
	} {
		if err := s.Validate(); drydock.ErrorCode(err) != drydock.EINVALID {
			t.Errorf("Validate(%+v) = %v; want EINVALID", s, err)
		}
	}
	ok := drydock.JobSpec{Task: "t", ContextBudget: 8000, Egress: []string{"pypi.example.com:443"}}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate(%+v) = %v", ok, err)
	}
}
