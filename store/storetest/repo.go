package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drydockhq/drydock"
)

func (s *suite) repoTests() map[string]func(t *testing.T) {
	return map[string]func(t *testing.T){
		"KeptThroughEveryRead": s.testRepoKept,
		"AbsentIsNil":          s.testRepoAbsent,
		"PushedCommit":         s.testPushedCommit,
	}
}

// testRepoKept: the repository a job starts from comes back from every
// read, and from the claim that hands the job to the runner which clones it.
func (s *suite) testRepoKept(t *testing.T) {
	st := s.newStore(t)
	repo := &drydock.RepoSpec{URL: "https://git.example.com/team/project.git", Ref: "feature/x", Secret: "GIT_TOKEN"}
	j := &drydock.Job{ID: newID(t), OwnerID: "tok-1", JobSpec: drydock.JobSpec{Task: "fix the build", Repo: repo}}
	mustCreate(t, st, j)
	if diff := cmp.Diff(repo, mustGet(t, st, j.ID).Repo); diff != "" {
		t.Fatalf("GetJob's repo (-want +got):\n%s", diff)
	}
	jobs, _, err := st.ListJobs(t.Context(), drydock.JobFilter{OwnerID: "tok-1"})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("ListJobs: %v %v", jobs, err)
	}
	if diff := cmp.Diff(repo, jobs[0].Repo); diff != "" {
		t.Fatalf("ListJobs's repo (-want +got):\n%s", diff)
	}
	claimed, err := st.ClaimJob(t.Context(), "worker-1", time.Minute)
	if err != nil || claimed == nil {
		t.Fatalf("ClaimJob: %v %v", claimed, err)
	}
	if diff := cmp.Diff(repo, claimed.Repo); diff != "" {
		t.Fatalf("ClaimJob's repo (-want +got):\n%s", diff)
	}
}

func (s *suite) testRepoAbsent(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, &drydock.Job{ID: newID(t), JobSpec: drydock.JobSpec{Task: "t"}})
	if got := mustGet(t, st, j.ID).Repo; got != nil {
		t.Fatalf("a job without a repository reads back %+v", got)
	}
}

// testPushedCommit: the commit a job pushed is kept with its result.
func (s *suite) testPushedCommit(t *testing.T) {
	st := s.newStore(t)
	repo := &drydock.RepoSpec{URL: "https://git.example.com/p.git", Push: &drydock.RepoPush{Branch: "drydock/fix", Author: "Ada <ada@example.com>"}}
	j := mustCreate(t, st, &drydock.Job{ID: newID(t), JobSpec: drydock.JobSpec{Task: "t", Repo: repo}})
	if _, err := st.ClaimJob(t.Context(), "w", time.Minute); err != nil {
		t.Fatal(err)
	}
	commit := "0123456789abcdef0123456789abcdef01234567"
	if err := st.FinishJob(t.Context(), j.ID, "w", drydock.JobResult{Status: drydock.StatusComplete, PushedCommit: commit}); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, st, j.ID)
	if got.PushedCommit != commit {
		t.Fatalf("PushedCommit = %q; want %q", got.PushedCommit, commit)
	}
	if diff := cmp.Diff(repo, got.Repo); diff != "" {
		t.Fatalf("repo with push (-want +got):\n%s", diff)
	}
}
