package main

import (
	"fmt"
	"strings"

	"github.com/drydockhq/drydock"
)

// RepoFlags are schedule's flags for a job that starts from a git
// repository.
type RepoFlags struct {
	Repo   string `name:"repo" placeholder:"URL[@REF]" help:"Clone this git repository into the workspace before the agent starts: an https URL, optionally with @branch, @tag or @commit (default: the repository's default branch). Its host and port are allowed for the job."`
	Secret string `name:"repo-secret" placeholder:"NAME" help:"The job's secret (--secret NAME) holding the token to clone with: TOKEN, or USER:TOKEN for hosts that want a particular user name. Never put the token in the URL."`
	Push   string `name:"repo-push" placeholder:"BRANCH" help:"When the job completes, commit its changes (the agent's summary as the message) and push them to this branch, which must start with drydock/. Never forced."`
	Author string `name:"repo-author" placeholder:"'NAME <EMAIL>'" help:"Author of the pushed commit (default: Drydock <drydock@localhost>)."`
}

// spec reads the flags; nil when no repository is given.
func (f RepoFlags) spec() (*drydock.RepoSpec, error) {
	if f.Repo == "" {
		if f.Secret != "" || f.Push != "" || f.Author != "" {
			return nil, fmt.Errorf("--repo-secret, --repo-push and --repo-author need --repo")
		}
		return nil, nil
	}
	if f.Author != "" && f.Push == "" {
		return nil, fmt.Errorf("--repo-author needs --repo-push")
	}
	url, ref := splitRepoRef(f.Repo)
	r := &drydock.RepoSpec{URL: url, Ref: ref, Secret: f.Secret}
	if f.Push != "" {
		r.Push = &drydock.RepoPush{Branch: f.Push, Author: f.Author}
	}
	return r, nil
}

// splitRepoRef splits URL@REF at the first '@' in the URL's path, so that
// a user name in the URL (which is refused, naming repo.secret) is never
// taken for a ref, and a ref may hold '/' and '@'.
func splitRepoRef(s string) (url, ref string) {
	hostStart := 0
	if i := strings.Index(s, "://"); i >= 0 {
		hostStart = i + 3
	}
	pathStart := strings.IndexByte(s[hostStart:], '/')
	if pathStart < 0 {
		return s, ""
	}
	pathStart += hostStart
	at := strings.IndexByte(s[pathStart:], '@')
	if at < 0 {
		return s, ""
	}
	return s[:pathStart+at], s[pathStart+at+1:]
}

// repoLine is a job's repository as status shows it: URL@REF and the name
// of the secret it clones with.
func repoLine(r *drydock.RepoSpec) string {
	if r == nil {
		return ""
	}
	s := r.URL
	if r.Ref != "" {
		s += "@" + r.Ref
	}
	if r.Secret != "" {
		s += " (token from secret " + r.Secret + ")"
	}
	if r.Push != nil {
		s += ", pushes to " + r.Push.Branch
	}
	return s
}
