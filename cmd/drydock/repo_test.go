package main

import (
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

func TestScheduleFromARepository(t *testing.T) {
	t.Setenv("GIT_TOKEN", cliCanary)
	for _, tt := range []struct {
		flag string
		want drydock.RepoSpec
	}{
		{"https://git.example.com/team/p.git", drydock.RepoSpec{URL: "https://git.example.com/team/p.git", Secret: "GIT_TOKEN"}},
		{"https://git.example.com/team/p.git@release/1.2", drydock.RepoSpec{URL: "https://git.example.com/team/p.git", Ref: "release/1.2", Secret: "GIT_TOKEN"}},
		{"https://git.example.com:8443/p@v1.0", drydock.RepoSpec{URL: "https://git.example.com:8443/p", Ref: "v1.0", Secret: "GIT_TOKEN"}},
		{"https://git.example.com/p@" + strings.Repeat("a", 40), drydock.RepoSpec{URL: "https://git.example.com/p", Ref: strings.Repeat("a", 40), Secret: "GIT_TOKEN"}},
	} {
		srv, newRun := setupFake(t)
		r := newRun()
		if err := r.exec("schedule", "fix it", "--secret", "GIT_TOKEN", "--repo", tt.flag, "--repo-secret", "GIT_TOKEN"); err != nil {
			t.Fatalf("%s: %v", tt.flag, err)
		}
		j := srv.Job(strings.TrimSpace(r.out.String()))
		if j == nil || j.Repo == nil || *j.Repo != tt.want {
			t.Fatalf("--repo %s: the server got %+v; want %+v", tt.flag, j, tt.want)
		}
		st := newRun()
		if err := st.exec("status", j.ID); err != nil {
			t.Fatal(err)
		}
		mustContain(t, "status", st.out.String(), "Repository: "+tt.flag+" (token from secret GIT_TOKEN)")
	}
}

func TestScheduleRepoErrors(t *testing.T) {
	t.Setenv("GIT_TOKEN", cliCanary)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--repo", "https://x-access-token:" + cliCanary + "@git.example.com/p.git"}, "must not carry a user name or password; put the token in a job secret"},
		{[]string{"--repo", "https://git.example.com/p.git@-x"}, "starts with '-'"},
		{[]string{"--repo", "git@git.example.com:p.git"}, "is not a URL"},
		{[]string{"--repo", "https://git.example.com/p.git", "--repo-secret", "GIT_TOKEN"}, `repo.secret names "GIT_TOKEN", which is not one of the job's secrets`},
		{[]string{"--repo-secret", "GIT_TOKEN", "--secret", "GIT_TOKEN"}, "need --repo"},
		{[]string{"--repo", "https://git.example.com/p.git", "--repo-push", "main"}, `repo.push.branch must start with "drydock/"`},
		{[]string{"--repo", "https://git.example.com/p.git", "--repo-author", "A <a@example.com>"}, "--repo-author needs --repo-push"},
	} {
		srv, newRun := setupFake(t)
		r := newRun()
		err := r.exec(append([]string{"schedule", "x"}, tt.args...)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error = %v; want %q", tt.args, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), cliCanary) {
			t.Errorf("%v: the error shows the token: %v", tt.args, err)
		}
		if n := len(srv.Jobs()); n != 0 {
			t.Errorf("%v: %d jobs created", tt.args, n)
		}
	}
}

func TestScheduleARepositoryPush(t *testing.T) {
	srv, newRun := setupFake(t)
	r := newRun()
	if err := r.exec("schedule", "fix it", "--repo", "https://git.example.com/p.git", "--repo-push", "drydock/fix", "--repo-author", "Ada <ada@example.com>"); err != nil {
		t.Fatal(err)
	}
	j := srv.Job(strings.TrimSpace(r.out.String()))
	if j == nil || j.Repo == nil || j.Repo.Push == nil || *j.Repo.Push != (drydock.RepoPush{Branch: "drydock/fix", Author: "Ada <ada@example.com>"}) {
		t.Fatalf("the server got %+v", j)
	}
	st := newRun()
	if err := st.exec("status", j.ID); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "status", st.out.String(), "Repository: https://git.example.com/p.git, pushes to drydock/fix")
}
