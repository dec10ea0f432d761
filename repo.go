package drydock

import (
	"net/mail"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits on a job's repository (JobSpec.Repo).
const (
	MaxRepoURLLen = 2048
	MaxRepoRefLen = 255
)

// RepoSpec is the git repository a job starts from: the runner clones it
// into the workspace before the agent starts, through the job's egress
// proxy, with the repository's host and port allowed for the job.
type RepoSpec struct {
	// URL is an https URL without credentials (http only for addresses on
	// private networks, which the operator must open to sandboxes).
	URL string `json:"url"`
	// Ref is a branch, a tag or a full commit id; empty means the
	// repository's default branch.
	Ref string `json:"ref,omitempty"`
	// Secret names one of the job's secrets that holds the token to
	// authenticate with ("TOKEN", or "USER:TOKEN" where the host wants a
	// particular user name). The value never appears in the job.
	Secret string `json:"secret,omitempty"`
	// Push, when set, commits the job's changes when it completes and
	// pushes them to a branch of the repository.
	Push *RepoPush `json:"push,omitempty"`
}

// RepoPush is where a completed job's changes go.
type RepoPush struct {
	// Branch is created or fast-forwarded; it must start with
	// PushBranchPrefix, so that a job never moves the user's own branches.
	Branch string `json:"branch"`
	// Author is "Name <email>" for the commit (default DefaultPushAuthor).
	Author string `json:"author,omitempty"`
}

// PushBranchPrefix starts every branch a job may push to.
const PushBranchPrefix = "drydock/"

// DefaultPushAuthor signs a job's commit when the job names no author.
const DefaultPushAuthor = "Drydock <drydock@localhost>"

// AuthorParts splits Author (or the default) into name and email.
func (p *RepoPush) AuthorParts() (name, email string, err error) {
	a := p.Author
	if a == "" {
		a = DefaultPushAuthor
	}
	addr, err := mail.ParseAddress(a)
	if err != nil || addr.Name == "" || strings.ContainsAny(addr.Name+addr.Address, "<>\n\r\x00") {
		return "", "", Errorf(EINVALID, "repo.push.author must be \"Name <email>\", e.g. %q", DefaultPushAuthor)
	}
	return addr.Name, addr.Address, nil
}

// Normalize trims the fields.
func (r *RepoSpec) Normalize() {
	r.URL = strings.TrimSpace(r.URL)
	r.Ref = strings.TrimSpace(r.Ref)
	r.Secret = strings.TrimSpace(r.Secret)
	if r.Push != nil {
		r.Push.Branch = strings.TrimSpace(r.Push.Branch)
		r.Push.Author = strings.TrimSpace(r.Push.Author)
	}
}

// Validate checks the repository against the job's secrets and returns an
// EINVALID *Error that names the problem.
func (r *RepoSpec) Validate(secrets SecretValues) error {
	if _, err := r.endpoint(); err != nil {
		return err
	}
	if r.Ref != "" {
		if err := CheckRepoRef(r.Ref); err != nil {
			return err
		}
	}
	if p := r.Push; p != nil {
		if !strings.HasPrefix(p.Branch, PushBranchPrefix) || len(p.Branch) == len(PushBranchPrefix) {
			return Errorf(EINVALID, "repo.push.branch must start with %q (e.g. %q), so that a job never moves your own branches", PushBranchPrefix, PushBranchPrefix+"fix-tests")
		}
		if err := CheckRepoRef(p.Branch); err != nil || isCommitID(p.Branch) {
			return Errorf(EINVALID, "repo.push.branch %q is not a valid branch name", shorten(p.Branch))
		}
		if _, _, err := p.AuthorParts(); err != nil {
			return err
		}
	}
	if r.Secret != "" {
		if _, ok := secrets[r.Secret]; !ok {
			names := "the job has none"
			if len(secrets) > 0 {
				names = "the job has " + strings.Join(secrets.Names(), ", ")
			}
			return Errorf(EINVALID, "repo.secret names %q, which is not one of the job's secrets (%s); add it to secrets", shorten(r.Secret), names)
		}
	}
	return nil
}

// EgressRule is the destination the clone (and a push) needs: the URL's
// host and port, and nothing else.
func (r *RepoSpec) EgressRule() (EgressRule, error) {
	return r.endpoint()
}

// IsCommit reports whether Ref is a full commit id (SHA-1 or SHA-256)
// rather than a branch or tag name.
func (r *RepoSpec) IsCommit() bool { return isCommitID(r.Ref) }

func (r *RepoSpec) endpoint() (EgressRule, error) {
	raw := r.URL
	switch {
	case raw == "":
		return EgressRule{}, Errorf(EINVALID, "repo.url is required")
	case len(raw) > MaxRepoURLLen:
		return EgressRule{}, Errorf(EINVALID, "repo.url is longer than %d bytes", MaxRepoURLLen)
	case !utf8.ValidString(raw) || strings.ContainsFunc(raw, func(c rune) bool { return c <= ' ' || c == 0x7f }):
		return EgressRule{}, Errorf(EINVALID, "repo.url must be a URL without spaces or control characters")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.Host == "" {
		return EgressRule{}, Errorf(EINVALID, "repo.url %q is not a URL such as https://git.example.com/team/project.git", shorten(raw))
	}
	// Checked before the scheme: a token must not be stored whatever else
	// is wrong with the URL.
	if u.User != nil {
		return EgressRule{}, Errorf(EINVALID, "repo.url must not carry a user name or password; put the token in a job secret and name it in repo.secret")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#") {
		return EgressRule{}, Errorf(EINVALID, "repo.url must not have a query or a fragment (tokens go in a job secret named by repo.secret)")
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return EgressRule{}, Errorf(EINVALID, "repo.url must be an https URL (not %q); ssh and git URLs are not supported", shorten(u.Scheme))
	}
	host, port := u.Hostname(), 443
	if scheme == "http" {
		port = 80
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return EgressRule{}, Errorf(EINVALID, "repo.url: the port must be a number from 1 to 65535")
		}
		port = int(n)
	} else if strings.HasSuffix(u.Host, ":") {
		return EgressRule{}, Errorf(EINVALID, "repo.url: the port must be a number from 1 to 65535")
	}
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		if a.Zone() != "" {
			return EgressRule{}, Errorf(EINVALID, "repo.url: an address with a zone is not accepted")
		}
		if scheme == "http" && !(a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast()) {
			return EgressRule{}, Errorf(EINVALID, "repo.url: plain http is accepted only for addresses on private networks (which the operator opens with --egress-private); use https")
		}
		return EgressRule{Prefix: netip.PrefixFrom(a, a.BitLen()), Port: port}, nil
	}
	if scheme == "http" {
		// A token sent over http to a name could cross any network; only a
		// private address (the operator's own git server) may take it.
		return EgressRule{}, Errorf(EINVALID, "repo.url: plain http is accepted only for addresses on private networks (which the operator opens with --egress-private); use https")
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if strings.HasPrefix(name, "*.") || !validHostPattern(name) {
		return EgressRule{}, Errorf(EINVALID, "repo.url: %q is not a host name", shorten(host))
	}
	return EgressRule{Host: name, Port: port}, nil
}

// CheckRepoRef accepts a full commit id, or a branch or tag name as git
// check-ref-format does (and refuses names git would take as an option).
func CheckRepoRef(ref string) error {
	bad := func(why string) error {
		return Errorf(EINVALID, "repo.ref %q is not a branch, tag or full commit id: %s", shorten(ref), why)
	}
	switch {
	case isCommitID(ref):
		return nil
	case len(ref) > MaxRepoRefLen:
		return Errorf(EINVALID, "repo.ref is longer than %d bytes", MaxRepoRefLen)
	case !utf8.ValidString(ref):
		return bad("it is not UTF-8")
	case strings.HasPrefix(ref, "-"):
		return bad("it starts with '-'")
	case strings.HasPrefix(ref, "/") || strings.HasSuffix(ref, "/") || strings.Contains(ref, "//"):
		return bad("it has an empty part between slashes")
	case strings.HasSuffix(ref, "."):
		return bad("it ends with '.'")
	case strings.Contains(ref, ".."):
		return bad("it contains '..'")
	case strings.Contains(ref, "@{") || ref == "@":
		return bad("it contains '@{' or is '@'")
	case strings.ContainsFunc(ref, func(c rune) bool { return c < 0x20 || c == 0x7f || strings.ContainsRune(" ~^:?*[\\", c) }):
		return bad("it contains a space, a control character or one of ~ ^ : ? * [ \\")
	}
	for part := range strings.SplitSeq(ref, "/") {
		if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return bad("a part starts with '.' or ends with '.lock'")
		}
	}
	return nil
}

func isCommitID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// RepoBasicAuth is the user and password git sends for a repository
// token: "USER:TOKEN" as given, else the token with the user name that
// GitHub expects and GitLab and Gitea accept for tokens.
func RepoBasicAuth(secret string) (user, password string) {
	if u, p, ok := strings.Cut(secret, ":"); ok && u != "" && p != "" {
		return u, p
	}
	return "x-access-token", secret
}

// shorten keeps a refused value short and printable in an error message.
func shorten(s string) string {
	if len(s) > 80 || !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s[:min(len(s), 80)], "?") + "..."
	}
	return s
}

// EgressRules is the allowlist the egress proxy enforces for the job: its
// Egress list plus the repository's host and port, which the clone and a
// push need whatever the list says (and which PUT .../egress cannot take
// away while the job runs).
func (j *Job) EgressRules() ([]EgressRule, error) {
	rules, err := ParseEgress(j.Egress)
	if err != nil || j.Repo == nil {
		return rules, err
	}
	r, err := j.Repo.EgressRule()
	if err != nil {
		return nil, err
	}
	return append(rules, r), nil
}
