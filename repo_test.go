package drydock

import (
	"strings"
	"testing"
)

func TestRepoSpecValidation(t *testing.T) {
	t.Parallel()
	secrets := SecretValues{"GIT_TOKEN": "ghp_abcdefgh12345678"}
	for _, tc := range []struct {
		name string
		repo RepoSpec
		want string // "" = accepted; else a part of the message
	}{
		{"https", RepoSpec{URL: "https://git.example.com/team/project.git"}, ""},
		{"https with port, branch and secret", RepoSpec{URL: "https://git.example.com:8443/p.git", Ref: "feature/x-1", Secret: "GIT_TOKEN"}, ""},
		{"tag", RepoSpec{URL: "https://git.example.com/p", Ref: "v1.2.3"}, ""},
		{"commit", RepoSpec{URL: "https://git.example.com/p", Ref: strings.Repeat("ab", 20)}, ""},
		{"http on loopback", RepoSpec{URL: "http://127.0.0.2:8080/p.git"}, ""},
		{"http on a private address", RepoSpec{URL: "http://10.1.2.3/p.git", Secret: "GIT_TOKEN"}, ""},
		{"missing", RepoSpec{}, "repo.url is required"},
		{"user and password", RepoSpec{URL: "https://bob:ghp_secret@git.example.com/p.git"}, "put the token in a job secret"},
		{"token as user", RepoSpec{URL: "https://ghp_secret@git.example.com/p.git"}, "put the token in a job secret"},
		{"token in the query", RepoSpec{URL: "https://git.example.com/p.git?private_token=x"}, "query"},
		{"fragment", RepoSpec{URL: "https://git.example.com/p.git#x"}, "fragment"},
		{"ssh", RepoSpec{URL: "ssh://git@git.example.com/p.git"}, "user name or password"},
		{"ssh without user", RepoSpec{URL: "ssh://git.example.com/p.git"}, "https URL"},
		{"scp form", RepoSpec{URL: "git@git.example.com:p.git"}, "not a URL"},
		{"file", RepoSpec{URL: "file:///etc/passwd"}, "not a URL"},
		{"ext transport", RepoSpec{URL: "ext::sh -c touch% /tmp/pwned"}, "spaces or control"},
		{"relative", RepoSpec{URL: "../other.git"}, "not a URL"},
		{"http to a public name", RepoSpec{URL: "http://git.example.com/p.git"}, "plain http"},
		{"http to a public address", RepoSpec{URL: "http://8.8.8.8/p.git"}, "plain http"},
		{"bad port", RepoSpec{URL: "https://git.example.com:0/p.git"}, "port"},
		{"empty port", RepoSpec{URL: "https://git.example.com:/p.git"}, "port"},
		{"bad host", RepoSpec{URL: "https://git_ex%41mple/p.git"}, "not a URL"},
		{"wildcard host", RepoSpec{URL: "https://*.example.com/p.git"}, "not a host name"},
		{"newline", RepoSpec{URL: "https://git.example.com/p\n.git"}, "control"},
		{"too long", RepoSpec{URL: "https://git.example.com/" + strings.Repeat("a", MaxRepoURLLen)}, "longer than"},
		{"option as ref", RepoSpec{URL: "https://git.example.com/p", Ref: "--upload-pack=touch /tmp/x"}, "starts with '-'"},
		{"dotdot ref", RepoSpec{URL: "https://git.example.com/p", Ref: "a..b"}, "'..'"},
		{"reflog ref", RepoSpec{URL: "https://git.example.com/p", Ref: "main@{1}"}, "'@{'"},
		{"lock ref", RepoSpec{URL: "https://git.example.com/p", Ref: "x/y.lock"}, ".lock"},
		{"hidden part", RepoSpec{URL: "https://git.example.com/p", Ref: "x/.y"}, "starts with '.'"},
		{"space in ref", RepoSpec{URL: "https://git.example.com/p", Ref: "a b"}, "space"},
		{"colon in ref", RepoSpec{URL: "https://git.example.com/p", Ref: "HEAD:x"}, "~ ^ :"},
		{"trailing slash", RepoSpec{URL: "https://git.example.com/p", Ref: "x/"}, "slashes"},
		{"long ref", RepoSpec{URL: "https://git.example.com/p", Ref: strings.Repeat("r", 256)}, "longer than"},
		{"unknown secret", RepoSpec{URL: "https://git.example.com/p", Secret: "GH_TOKEN"}, `"GH_TOKEN", which is not one of the job's secrets (the job has GIT_TOKEN)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := tc.repo
			r.Normalize()
			err := r.Validate(secrets)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted %+v; want an error with %q", tc.repo, tc.want)
			case tc.want != "" && (!strings.Contains(err.Error(), tc.want) || ErrorCode(err) != EINVALID):
				t.Fatalf("error %q (%s); want EINVALID with %q", err, ErrorCode(err), tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "ghp_") {
				t.Fatalf("the error repeats the token: %v", err)
			}
		})
	}
}

func TestJobWithoutSecretsCannotNameOne(t *testing.T) {
	t.Parallel()
	s := JobSpec{Task: "x", Repo: &RepoSpec{URL: "https://git.example.com/p", Secret: "TOKEN"}}
	err := s.Validate()
	if err == nil || !strings.Contains(err.Error(), "the job has none") {
		t.Fatalf("got %v", err)
	}
}

func TestRepoHostIsAllowedForTheJob(t *testing.T) {
	t.Parallel()
	j := &Job{JobSpec: JobSpec{Egress: []string{"pypi.example.com:443"}, Repo: &RepoSpec{URL: "https://Git.Example.com/p.git"}}}
	rules, err := j.EgressRules()
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case !EgressAllows(rules, "git.example.com", 443):
		t.Fatalf("%v does not allow the repository", rules)
	case EgressAllows(rules, "git.example.com", 22), EgressAllows(rules, "other.example.com", 443):
		t.Fatalf("%v allows more than the repository's host and port", rules)
	case !EgressAllows(rules, "pypi.example.com", 443):
		t.Fatalf("%v lost the job's own list", rules)
	}
	j = &Job{JobSpec: JobSpec{Repo: &RepoSpec{URL: "http://127.0.0.2:8080/p.git"}}}
	if rules, _ = j.EgressRules(); !EgressAllows(rules, "127.0.0.2", 8080) || EgressAllows(rules, "127.0.0.2", 80) {
		t.Fatalf("address rule %v", rules)
	}
}

func TestRepoBasicAuth(t *testing.T) {
	t.Parallel()
	if u, p := RepoBasicAuth("glpat-1234567890"); u != "x-access-token" || p != "glpat-1234567890" {
		t.Fatalf("token alone: %q %q", u, p)
	}
	if u, p := RepoBasicAuth("oauth2:glpat-1234567890"); u != "oauth2" || p != "glpat-1234567890" {
		t.Fatalf("user:token: %q %q", u, p)
	}
}

func TestRepoPushValidation(t *testing.T) {
	t.Parallel()
	url := "https://git.example.com/p.git"
	for _, tc := range []struct {
		push RepoPush
		want string
	}{
		{RepoPush{Branch: "drydock/fix-tests"}, ""},
		{RepoPush{Branch: "drydock/a/b", Author: "Ada Lovelace <ada@example.com>"}, ""},
		{RepoPush{Branch: "main"}, `must start with "drydock/"`},
		{RepoPush{Branch: "drydock/"}, `must start with "drydock/"`},
		{RepoPush{}, `must start with "drydock/"`},
		{RepoPush{Branch: "drydock/a..b"}, "not a valid branch name"},
		{RepoPush{Branch: "drydock/x.lock"}, "not a valid branch name"},
		{RepoPush{Branch: "drydock/x", Author: "ada@example.com"}, "Name <email>"},
		{RepoPush{Branch: "drydock/x", Author: "Ada <ada@example.com>\nX: y"}, "Name <email>"},
		{RepoPush{Branch: "drydock/x", Author: "Ada"}, "Name <email>"},
	} {
		r := RepoSpec{URL: url, Push: &tc.push}
		r.Normalize()
		err := r.Validate(nil)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want %q", tc.push, err, tc.want)
		}
	}
	name, email, err := (&RepoPush{Branch: "drydock/x"}).AuthorParts()
	if err != nil || name != "Drydock" || email != "drydock@localhost" {
		t.Errorf("default author: %q %q %v", name, email, err)
	}
}
