package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drydockhq/drydock"
)

func (s *suite) followUpTests() map[string]func(t *testing.T) {
	return map[string]func(t *testing.T){
		"ParentKeptThroughEveryRead": s.testParentKept,
		"FollowUpsOldestFirst":       s.testFollowUpsOldestFirst,
		"NoFollowUps":                s.testNoFollowUps,
	}
}

// testParentKept: a follow-up's parent comes back from every read, the
// claim that hands it to the runner (which loads the parent's
// conversation) included.
func (s *suite) testParentKept(t *testing.T) {
	st := s.newStore(t)
	parent := mustCreate(t, st, newJob(t, "tok-1"))
	child := newJob(t, "tok-1")
	child.ParentJobID = parent.ID
	mustCreate(t, st, child)
	if got := mustGet(t, st, child.ID).ParentJobID; got != parent.ID {
		t.Fatalf("GetJob's parent_job_id = %q; want %q", got, parent.ID)
	}
	if got := mustGet(t, st, parent.ID).ParentJobID; got != "" {
		t.Fatalf("a job that starts afresh reads back parent_job_id %q", got)
	}
	jobs, _, err := st.ListJobs(t.Context(), drydock.JobFilter{OwnerID: "tok-1"})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("ListJobs: %v %v", jobs, err)
	}
	if jobs[0].ID != child.ID || jobs[0].ParentJobID != parent.ID {
		t.Fatalf("ListJobs' newest job = %s with parent %q; want %s with parent %s", jobs[0].ID, jobs[0].ParentJobID, child.ID, parent.ID)
	}
	mustClaim(t, st, "w", time.Minute) // the parent, oldest
	if claimed := mustClaim(t, st, "w", time.Minute); claimed.ID != child.ID || claimed.ParentJobID != parent.ID {
		t.Fatalf("ClaimJob = %s with parent %q; want %s with parent %s", claimed.ID, claimed.ParentJobID, child.ID, parent.ID)
	}
}

// testFollowUpsOldestFirst: a job lists its own follow-ups, not its
// grandchildren nor another job's, oldest first.
func (s *suite) testFollowUpsOldestFirst(t *testing.T) {
	st := s.newStore(t)
	root := mustCreate(t, st, newJob(t, "tok-1"))
	other := mustCreate(t, st, newJob(t, "tok-1"))
	var want []string
	for range 3 {
		c := newJob(t, "tok-1")
		c.ParentJobID = root.ID
		mustCreate(t, st, c)
		want = append(want, c.ID)
		o := newJob(t, "tok-1")
		o.ParentJobID = other.ID
		mustCreate(t, st, o)
	}
	grandchild := newJob(t, "tok-1")
	grandchild.ParentJobID = want[0]
	mustCreate(t, st, grandchild)

	got, err := st.FollowUps(t.Context(), root.ID, "")
	if err != nil {
		t.Fatalf("FollowUps: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("FollowUps(root) (-want +got):\n%s", diff)
	}
	got, err = st.FollowUps(t.Context(), want[0], "")
	if err != nil || len(got) != 1 || got[0] != grandchild.ID {
		t.Fatalf("FollowUps(first child) = %v, %v; want [%s]", got, err, grandchild.ID)
	}
	// An owner is shown only its own follow-ups.
	foreign := newJob(t, "tok-admin")
	foreign.ParentJobID = root.ID
	mustCreate(t, st, foreign)
	if got, err = st.FollowUps(t.Context(), root.ID, "tok-1"); err != nil || !cmp.Equal(got, want) {
		t.Fatalf("FollowUps(root, tok-1) = %v, %v; want %v, without tok-admin's", got, err, want)
	}
	if got, err = st.FollowUps(t.Context(), root.ID, "tok-admin"); err != nil || len(got) != 1 || got[0] != foreign.ID {
		t.Fatalf("FollowUps(root, tok-admin) = %v, %v; want [%s]", got, err, foreign.ID)
	}
	if got, err = st.FollowUps(t.Context(), root.ID, ""); err != nil || len(got) != len(want)+1 {
		t.Fatalf("FollowUps(root, every owner) = %v, %v; want %d", got, err, len(want)+1)
	}
}

// testNoFollowUps: a job without follow-ups, and an unknown id, list
// none; the empty parent of jobs that start afresh is no job's id.
func (s *suite) testNoFollowUps(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newJob(t, "tok-1"))
	mustCreate(t, st, newJob(t, "tok-1"))
	for _, id := range []string{j.ID, newID(t), ""} {
		got, err := st.FollowUps(t.Context(), id, "")
		if err != nil {
			t.Fatalf("FollowUps(%q): %v", id, err)
		}
		if got == nil || len(got) != 0 {
			t.Fatalf("FollowUps(%q) = %#v; want an empty list", id, got)
		}
	}
}
