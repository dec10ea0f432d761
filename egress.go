package drydock

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// MaxEgressRules bounds a job's allowlist; an allowlist is a short list of
// named services, not a firewall table.
const MaxEgressRules = 64

// EgressRule is one destination a sandbox may reach: a host name (a leading
// "*." also matches every subdomain), an IP address or a CIDR, and a port (0:
// any port). Its text form is "host[:port]", as in JobSpec.Egress and
// SandboxSpec.Egress.
type EgressRule struct {
	Host   string       // lower case, no trailing dot; "" when Prefix is set
	Prefix netip.Prefix // valid for address and CIDR rules
	Port   int          // 0 means any port
}

// ParseEgressRule reads "host[:port]", "[v6]:port", an address or a CIDR.
func ParseEgressRule(s string) (EgressRule, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return EgressRule{}, Errorf(EINVALID, "empty egress destination; want host[:port]")
	}
	if p, ok := parseEgressAddr(s); ok {
		return EgressRule{Prefix: p}, nil
	}
	host, port := s, 0
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return EgressRule{}, Errorf(EINVALID, "egress destination %q: the port must be a number from 1 to 65535", s)
		}
		host, port = h, int(n)
	} else if strings.Contains(s, ":") {
		return EgressRule{}, Errorf(EINVALID, "egress destination %q: want host[:port] (IPv6 addresses with a port go in brackets)", s)
	}
	if p, ok := parseEgressAddr(host); ok {
		return EgressRule{Prefix: p, Port: port}, nil
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if !validHostPattern(host) {
		return EgressRule{}, Errorf(EINVALID, "egress destination %q: %q is not a host name, address or CIDR", s, host)
	}
	return EgressRule{Host: host, Port: port}, nil
}

// String is the canonical text form.
func (r EgressRule) String() string {
	h := r.Host
	if r.Prefix.IsValid() {
		h = r.Prefix.String()
		if r.Prefix.IsSingleIP() {
			h = r.Prefix.Addr().String()
		}
	}
	if r.Port == 0 {
		return h
	}
	return net.JoinHostPort(h, strconv.Itoa(r.Port))
}

// Allows reports whether the rule admits a connection to host:port, where
// host is a name or an address as the client asked for it. A name rule never
// admits a bare address and an address rule never admits a name: the proxy
// that enforces rules resolves names itself.
func (r EgressRule) Allows(host string, port int) bool {
	if r.Port != 0 && r.Port != port {
		return false
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if a, err := netip.ParseAddr(host); err == nil {
		return r.Prefix.IsValid() && r.Prefix.Contains(a.Unmap())
	}
	switch {
	case r.Host == "":
		return false
	case strings.HasPrefix(r.Host, "*."):
		return strings.HasSuffix(host, r.Host[1:])
	}
	return host == r.Host
}

// ParseEgress reads and checks an allowlist, returning the rules in order.
func ParseEgress(list []string) ([]EgressRule, error) {
	if len(list) > MaxEgressRules {
		return nil, Errorf(EINVALID, "egress lists %d destinations; the limit is %d", len(list), MaxEgressRules)
	}
	rules := make([]EgressRule, 0, len(list))
	for _, s := range list {
		r, err := ParseEgressRule(s)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// EgressAllows reports whether any rule admits host:port.
func EgressAllows(rules []EgressRule, host string, port int) bool {
	for _, r := range rules {
		if r.Allows(host, port) {
			return true
		}
	}
	return false
}

func parseEgressAddr(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), true
	}
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}

// validHostPattern accepts DNS names of letters, digits and hyphens, with an
// optional leading "*." label.
func validHostPattern(h string) bool {
	h = strings.TrimPrefix(h, "*.")
	if h == "" || len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
