package drydock

import (
	"net/netip"
	"strings"
)

// Where a job's egress list came from (Job.EgressSource).
const (
	// EgressFromJob: the job's own list, given when it was created or set
	// since (PUT /v1/jobs/{id}/egress).
	EgressFromJob = "job"
	// EgressFromDefault: the server's default (--egress-default), copied
	// into the job when it was created without a list of its own.
	EgressFromDefault = "default"
)

// EgressPolicy is the operator's say over jobs' allowlists: the list a job
// gets when it names none, and an optional ceiling that no job's list may
// go beyond. A job's own list replaces the default whole; it may be
// narrower or wider than the default, but with a ceiling every entry must
// fall within one of the ceiling's entries.
type EgressPolicy struct {
	// Default is the list, in canonical form, of a job that gives none.
	Default []string
	// Ceiling bounds every job's list; nil sets no bound.
	Ceiling []EgressRule
}

// NewEgressPolicy checks the operator's lists: both parse, and the default
// lies within the ceiling (a default that no job could ask for is a
// mistake, not a policy). Errors name the list ("default" or "ceiling").
func NewEgressPolicy(def, ceiling []string) (EgressPolicy, error) {
	var p EgressPolicy
	rules, err := ParseEgress(def)
	if err != nil {
		return p, Errorf(EINVALID, "default: %s", ErrorMessage(err))
	}
	for _, r := range rules {
		p.Default = append(p.Default, r.String())
	}
	if len(ceiling) > 0 {
		if p.Ceiling, err = ParseEgress(ceiling); err != nil {
			return p, Errorf(EINVALID, "ceiling: %s", ErrorMessage(err))
		}
		for _, r := range rules {
			if !r.within(p.Ceiling) {
				return p, Errorf(EINVALID, "default: %s is outside the ceiling %s", r, strings.Join(p.CeilingList(), ","))
			}
		}
	}
	return p, nil
}

// CeilingList is the ceiling in text form.
func (p EgressPolicy) CeilingList() []string {
	out := make([]string, 0, len(p.Ceiling))
	for _, r := range p.Ceiling {
		out = append(out, r.String())
	}
	return out
}

// Resolve returns the list a new job runs with and its source: the
// default when the job gave none (list == nil; an empty, non-nil list is
// the job asking for nothing), else the job's own list once Check passes.
func (p EgressPolicy) Resolve(list []string) ([]string, string, error) {
	if list == nil {
		return append([]string(nil), p.Default...), EgressFromDefault, nil
	}
	if err := p.Check(list); err != nil {
		return nil, "", err
	}
	return list, EgressFromJob, nil
}

// Check refuses (EFORBIDDEN, naming the first entry outside) a list that
// goes beyond the ceiling, and (EINVALID) one that does not parse.
func (p EgressPolicy) Check(list []string) error {
	rules, err := ParseEgress(list)
	if err != nil || p.Ceiling == nil {
		return err
	}
	for _, r := range rules {
		if !r.within(p.Ceiling) {
			return Errorf(EFORBIDDEN, "egress destination %s is outside what this server allows jobs to reach (%s); ask its operator to widen --egress-allow", r, strings.Join(p.CeilingList(), ", "))
		}
	}
	return nil
}

// Allows reports whether the ceiling admits host:port (always, without one).
func (p EgressPolicy) Allows(host string, port int) bool {
	return p.Ceiling == nil || EgressAllows(p.Ceiling, host, port)
}

// within reports whether one of the rules admits everything r admits.
// Coverage by several rules together (two /17s for a /16) does not count:
// the ceiling is read entry by entry, as people read it.
func (r EgressRule) within(rules []EgressRule) bool {
	for _, c := range rules {
		if r.withinRule(c) {
			return true
		}
	}
	return false
}

func (r EgressRule) withinRule(c EgressRule) bool {
	if c.Port != 0 && c.Port != r.Port {
		return false
	}
	if r.Prefix.IsValid() || c.Prefix.IsValid() {
		// A name rule never admits an address and the reverse
		// (EgressRule.Allows), so only addresses cover addresses.
		return r.Prefix.IsValid() && c.Prefix.IsValid() && prefixWithin(r.Prefix, c.Prefix)
	}
	switch {
	case strings.HasPrefix(c.Host, "*."):
		// "*.x" admits every name that ends in ".x": a name or pattern
		// under it, or "*.x" itself, but not "x".
		return strings.HasSuffix(r.Host, c.Host[1:]) || r.Host == c.Host
	default:
		return r.Host == c.Host
	}
}

func prefixWithin(inner, outer netip.Prefix) bool {
	return inner.Addr().BitLen() == outer.Addr().BitLen() && inner.Bits() >= outer.Bits() && outer.Contains(inner.Addr())
}
