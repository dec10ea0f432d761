package storetest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drydockhq/drydock"
)

func (s *suite) jobTests() map[string]func(t *testing.T) {
	return map[string]func(t *testing.T){
		"CreateAndGet":           s.testCreateAndGet,
		"CreateSetsDefaults":     s.testCreateSetsDefaults,
		"CreateErrors":           s.testCreateErrors,
		"GetMissing":             s.testGetMissing,
		"ListPagination":         s.testListPagination,
		"ListStatusFilter":       s.testListStatusFilter,
		"ListMetadataFilter":     s.testListMetadataFilter,
		"ListLimits":             s.testListLimits,
		"ListInvalid":            s.testListInvalid,
		"SetArtifact":            s.testSetArtifact,
		"SetEgress":              s.testSetEgress,
		"Ping":                   s.testPing,
		"ConcurrentCreateAndGet": s.testConcurrentCreate,
		"InputArchive":           s.testInputArchive,
	}
}

func (s *suite) testCreateAndGet(t *testing.T) {
	st := s.newStore(t)
	j := &drydock.Job{
		ID:        newID(t),
		OwnerID:   "tok-1",
		CreatedAt: ts(time.Now().Add(-time.Minute)),
		JobSpec: drydock.JobSpec{
			Task:          "Write a haiku about ships into haiku.txt",
			Model:         "claude-test",
			MaxSteps:      40,
			Timeout:       drydock.Duration(90*time.Minute + 1500*time.Millisecond),
			Profile:       drydock.ProfileDesktop,
			Metadata:      map[string]string{"team": "infra", "ticket": "DD-7"},
			ContextBudget: 32000,
			Egress:        []string{"pypi.example.com:443", "10.0.0.0/8"},
		},
		EgressSource: drydock.EgressFromDefault,
	}
	mustCreate(t, st, j)
	if j.Status != drydock.StatusPending {
		t.Errorf("CreateJob left Status %q; want pending", j.Status)
	}
	want := *j
	want.Status = drydock.StatusPending
	got := mustGet(t, st, j.ID)
	if diff := cmp.Diff(&want, got, jobOpts); diff != "" {
		t.Fatalf("GetJob mismatch (-want +got):\n%s", diff)
	}

	es := mustEvents(t, st, j.ID)
	if len(es) != 1 {
		t.Fatalf("a new job has %d events; want 1", len(es))
	}
	e := es[0]
	if e.JobID != j.ID || e.Seq != 1 || e.Type != drydock.EventStatus || e.Time.IsZero() {
		t.Fatalf("first event = %+v; want job %s, seq 1, type status, a time", e, j.ID)
	}
	sameJSON(t, "first event", e.Data, `{"status":"pending"}`)
}

func (s *suite) testCreateSetsDefaults(t *testing.T) {
	st := s.newStore(t)
	j := &drydock.Job{ID: newID(t), JobSpec: drydock.JobSpec{Task: "t"}, Status: drydock.StatusComplete, Attempts: 3}
	before := time.Now()
	mustCreate(t, st, j)
	after := time.Now()
	within(t, "CreatedAt set by the store", j.CreatedAt, before, after)
	got := mustGet(t, st, j.ID)
	if !got.CreatedAt.Equal(j.CreatedAt) {
		t.Errorf("stored CreatedAt %s; CreateJob reported %s", got.CreatedAt, j.CreatedAt)
	}
	if got.Status != drydock.StatusPending || got.Attempts != 0 || got.LeaseOwner != "" || got.StartedAt != nil {
		t.Errorf("new job = %+v; want pending, never claimed", got)
	}
	if got.Metadata != nil && len(got.Metadata) != 0 {
		t.Errorf("Metadata = %v; want empty", got.Metadata)
	}
}

func (s *suite) testCreateErrors(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newJob(t, "a"))

	dup := newJob(t, "b")
	dup.ID = j.ID
	dup.Task = "another task"
	wantCode(t, "CreateJob with a taken id", st.CreateJob(t.Context(), dup), drydock.ECONFLICT)
	if got := mustGet(t, st, j.ID); got.Task != j.Task || got.OwnerID != "a" {
		t.Fatalf("a failed duplicate create changed the job: %+v", got)
	}
	if n := len(mustEvents(t, st, j.ID)); n != 1 {
		t.Fatalf("a failed duplicate create left %d events; want 1", n)
	}

	noID := newJob(t, "a")
	noID.ID = ""
	wantCode(t, "CreateJob without id", st.CreateJob(t.Context(), noID), drydock.EINVALID)
}

func (s *suite) testGetMissing(t *testing.T) {
	st := s.newStore(t)
	_, err := st.GetJob(t.Context(), newID(t))
	wantCode(t, "GetJob of a missing job", err, drydock.ENOTFOUND)
}

// listAll pages through f with the given limit and returns the ids in order
// and the size of each page.
func listAll(t *testing.T, st drydock.Store, f drydock.JobFilter) (ids []string, pages []int) {
	t.Helper()
	seen := map[string]bool{}
	for range 1000 {
		jobs, next, err := st.ListJobs(t.Context(), f)
		if err != nil {
			t.Fatalf("ListJobs(%+v): %v", f, err)
		}
		pages = append(pages, len(jobs))
		for _, j := range jobs {
			if seen[j.ID] {
				t.Fatalf("job %s listed twice", j.ID)
			}
			seen[j.ID] = true
			ids = append(ids, j.ID)
		}
		if next == "" {
			return ids, pages
		}
		if len(jobs) == 0 {
			t.Fatalf("ListJobs returned an empty page with next cursor %q", next)
		}
		f.Cursor = next
	}
	t.Fatal("ListJobs never reached the last page")
	return nil, nil
}

func newestFirst(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	slices.Reverse(out)
	return out
}

func (s *suite) testListPagination(t *testing.T) {
	st := s.newStore(t)
	var alice, bob, all []string
	for i := range 23 {
		owner := "alice"
		if i%3 == 2 {
			owner = "bob"
		}
		j := mustCreate(t, st, newJob(t, owner))
		all = append(all, j.ID)
		if owner == "alice" {
			alice = append(alice, j.ID)
		} else {
			bob = append(bob, j.ID)
		}
	}
	if len(alice) != 16 || len(bob) != 7 {
		t.Fatalf("setup: %d alice, %d bob jobs", len(alice), len(bob))
	}

	tests := []struct {
		name      string
		filter    drydock.JobFilter
		want      []string
		wantPages []int
	}{
		{"alice by 5", drydock.JobFilter{OwnerID: "alice", Limit: 5}, alice, []int{5, 5, 5, 1}},
		{"alice by 4, last page full", drydock.JobFilter{OwnerID: "alice", Limit: 4}, alice, []int{4, 4, 4, 4}},
		{"bob by 10", drydock.JobFilter{OwnerID: "bob", Limit: 10}, bob, []int{7}},
		{"everyone by 6", drydock.JobFilter{Limit: 6}, all, []int{6, 6, 6, 5}},
		{"everyone by 1", drydock.JobFilter{Limit: 1}, all, slices.Repeat([]int{1}, 23)},
		{"nobody", drydock.JobFilter{OwnerID: "carol"}, nil, []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, pages := listAll(t, st, tt.filter)
			if diff := cmp.Diff(newestFirst(tt.want), ids, jobOpts); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantPages, pages); diff != "" {
				t.Errorf("page sizes (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("later jobs do not shift pages", func(t *testing.T) {
		first, next, err := st.ListJobs(t.Context(), drydock.JobFilter{OwnerID: "alice", Limit: 8})
		if err != nil {
			t.Fatal(err)
		}
		mustCreate(t, st, newJob(t, "alice"))
		rest, _ := listAll(t, st, drydock.JobFilter{OwnerID: "alice", Limit: 8, Cursor: next})
		var ids []string
		for _, j := range first {
			ids = append(ids, j.ID)
		}
		ids = append(ids, rest...)
		if diff := cmp.Diff(newestFirst(alice), ids); diff != "" {
			t.Errorf("ids (-want +got):\n%s", diff)
		}
	})
}

func (s *suite) testListStatusFilter(t *testing.T) {
	st := s.newStore(t)
	byStatus := map[drydock.JobStatus][]string{}
	var ids []string
	for range 12 {
		ids = append(ids, mustCreate(t, st, newJob(t, "u")).ID)
	}
	// Claims take the oldest first: jobs 0-4 run, then 0 and 1 finish.
	for range 5 {
		mustClaim(t, st, "w", time.Hour)
	}
	for i, res := range []drydock.JobResult{{Status: drydock.StatusComplete}, {Status: drydock.StatusError, Error: "boom"}} {
		if err := st.FinishJob(t.Context(), ids[i], "w", res); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids[10:] {
		if _, err := st.CancelJob(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	byStatus[drydock.StatusComplete] = ids[0:1]
	byStatus[drydock.StatusError] = ids[1:2]
	byStatus[drydock.StatusRunning] = ids[2:5]
	byStatus[drydock.StatusPending] = ids[5:10]
	byStatus[drydock.StatusCancelled] = ids[10:12]

	tests := [][]drydock.JobStatus{
		{drydock.StatusPending},
		{drydock.StatusRunning},
		{drydock.StatusComplete},
		{drydock.StatusError},
		{drydock.StatusCancelled},
		{drydock.StatusRunning, drydock.StatusCancelled},
		{drydock.StatusComplete, drydock.StatusError, drydock.StatusCancelled},
		{drydock.StatusRunning, drydock.StatusRunning, drydock.StatusError, drydock.StatusRunning},
	}
	for _, statuses := range tests {
		var want []string
		for i, s := range statuses {
			if !slices.Contains(statuses[:i], s) {
				want = append(want, byStatus[s]...)
			}
		}
		got, _ := listAll(t, st, drydock.JobFilter{Status: statuses, Limit: 2})
		if diff := cmp.Diff(newestFirst(want), got, jobOpts); diff != "" {
			t.Errorf("status %v (-want +got):\n%s", statuses, diff)
		}
		got, _ = listAll(t, st, drydock.JobFilter{Status: statuses, OwnerID: "someone else"})
		if len(got) != 0 {
			t.Errorf("status %v of another owner: %d jobs; want 0", statuses, len(got))
		}
	}
	jobs, _, err := st.ListJobs(t.Context(), drydock.JobFilter{Status: []drydock.JobStatus{drydock.StatusRunning}})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.Status != drydock.StatusRunning || j.LeaseOwner != "w" || j.Attempts != 1 {
			t.Errorf("listed running job = %+v", j)
		}
	}
}

func (s *suite) testListLimits(t *testing.T) {
	st := s.newStore(t)
	createMany(t, st, 510, "u")
	tests := []struct {
		limit, want int
	}{
		{0, 50},  // default
		{-3, 50}, // default
		{7, 7},
		{500, 500},
		{10000, 500}, // capped
	}
	for _, tt := range tests {
		jobs, next, err := st.ListJobs(t.Context(), drydock.JobFilter{Limit: tt.limit})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != tt.want || next == "" {
			t.Errorf("ListJobs(limit %d) = %d jobs, next %q; want %d and a next cursor", tt.limit, len(jobs), next, tt.want)
		}
	}
}

// createMany creates n jobs from 16 goroutines and returns their ids.
func createMany(t *testing.T, st drydock.Store, n int, owner string) []string {
	t.Helper()
	jobs := make([]*drydock.Job, n)
	for i := range jobs {
		jobs[i] = newJob(t, owner)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan *drydock.Job)
	for range 16 {
		wg.Go(func() {
			for j := range next {
				if err := st.CreateJob(t.Context(), j); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("CreateJob: %v", err)
	}
	ids := make([]string, n)
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}

func (s *suite) testListInvalid(t *testing.T) {
	st := s.newStore(t)
	mustCreate(t, st, newJob(t, "u"))
	tests := []struct {
		name string
		f    drydock.JobFilter
	}{
		{"garbage cursor", drydock.JobFilter{Cursor: "!!not a cursor!!"}},
		{"id as cursor", drydock.JobFilter{Cursor: newID(t)}},
		{"unknown status", drydock.JobFilter{Status: []drydock.JobStatus{"sleeping"}}},
		{"unknown among known", drydock.JobFilter{Status: []drydock.JobStatus{drydock.StatusPending, ""}}},
	}
	for _, tt := range tests {
		_, _, err := st.ListJobs(t.Context(), tt.f)
		wantCode(t, tt.name, err, drydock.EINVALID)
	}
}

func (s *suite) testSetArtifact(t *testing.T) {
	st := s.newStore(t)
	pending := mustCreate(t, st, newJob(t, "u"))
	if err := st.SetArtifact(t.Context(), pending.ID, "art/1.tar.zst", 1234); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, st, pending.ID); got.ArtifactKey != "art/1.tar.zst" || got.ArtifactSize != 1234 || got.Status != drydock.StatusPending {
		t.Fatalf("after SetArtifact: %+v", got)
	}

	// A finish without an artifact keeps the one recorded before; a later
	// SetArtifact on the finished job replaces it.
	running := mustClaim(t, st, "w", time.Hour)
	if running.ID != pending.ID {
		t.Fatalf("claimed %s; want %s", running.ID, pending.ID)
	}
	if err := st.FinishJob(t.Context(), running.ID, "w", drydock.JobResult{Status: drydock.StatusComplete}); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, st, pending.ID); got.ArtifactKey != "art/1.tar.zst" || got.ArtifactSize != 1234 {
		t.Fatalf("FinishJob without artifact dropped it: %+v", got)
	}
	if err := st.SetArtifact(t.Context(), pending.ID, "art/2.tar.zst", 99); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, st, pending.ID); got.ArtifactKey != "art/2.tar.zst" || got.ArtifactSize != 99 || got.Status != drydock.StatusComplete {
		t.Fatalf("SetArtifact on a finished job: %+v", got)
	}

	wantCode(t, "SetArtifact of a missing job", st.SetArtifact(t.Context(), newID(t), "k", 1), drydock.ENOTFOUND)
}

// testInputArchive: the archive a job starts from is part of what a
// worker claims, and is kept by every read path and by CreateJobOnce.
func (s *suite) testInputArchive(t *testing.T) {
	st := s.newStore(t)
	j := newJob(t, "u")
	j.InputKey, j.InputSize = j.ID+".input.tar.gz", 4321
	mustCreate(t, st, j)
	if got := mustGet(t, st, j.ID); got.InputKey != j.InputKey || got.InputSize != 4321 {
		t.Fatalf("GetJob input = %q, %d; want %q, 4321", got.InputKey, got.InputSize, j.InputKey)
	}
	page, _, err := st.ListJobs(t.Context(), drydock.JobFilter{OwnerID: "u"})
	if err != nil || len(page) != 1 || page[0].InputKey != j.InputKey || page[0].InputSize != 4321 {
		t.Fatalf("ListJobs = %v, %v; want the job with its input", page, err)
	}
	claimed := mustClaim(t, st, "w", time.Hour)
	if claimed.InputKey != j.InputKey || claimed.InputSize != 4321 {
		t.Fatalf("ClaimJob input = %q, %d; want %q, 4321", claimed.InputKey, claimed.InputSize, j.InputKey)
	}

	once := newJob(t, "u")
	once.InputKey, once.InputSize = once.ID+".input.tar.gz", 7
	stored, created, err := st.CreateJobOnce(t.Context(), once, drydock.IdempotencyKey{Key: "k", Fingerprint: []byte("f"), TTL: time.Hour})
	if err != nil || !created {
		t.Fatalf("CreateJobOnce = %v, %v", created, err)
	}
	if got := mustGet(t, st, stored.ID); got.InputKey != once.InputKey || got.InputSize != 7 {
		t.Fatalf("CreateJobOnce input = %q, %d; want %q, 7", got.InputKey, got.InputSize, once.InputKey)
	}
	if got := mustGet(t, st, mustCreate(t, st, newJob(t, "u")).ID); got.InputKey != "" || got.InputSize != 0 {
		t.Fatalf("a job without an upload has input %q, %d", got.InputKey, got.InputSize)
	}
}

func (s *suite) testSetEgress(t *testing.T) {
	st := s.newStore(t)
	nj := newJob(t, "u")
	nj.Egress, nj.EgressSource = []string{"registry.example.com:443"}, drydock.EgressFromDefault
	j := mustCreate(t, st, nj)
	got, err := st.SetEgress(t.Context(), j.ID, []string{"example.com", "*.npm.example.com:443"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"example.com", "*.npm.example.com:443"}, got.Egress); diff != "" {
		t.Fatalf("SetEgress returned (-want +got):\n%s", diff)
	}
	// A list set on the job is the job's own, whatever it started from.
	if got.EgressSource != drydock.EgressFromJob {
		t.Errorf("after SetEgress the source is %q; want %q", got.EgressSource, drydock.EgressFromJob)
	}
	if diff := cmp.Diff(got, mustGet(t, st, j.ID), jobOpts); diff != "" {
		t.Fatalf("stored job differs from the returned one (-returned +stored):\n%s", diff)
	}

	// A running job's list changes too; emptying it means no egress.
	mustClaim(t, st, "w", time.Hour)
	got, err = st.SetEgress(t.Context(), j.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Egress) != 0 || len(mustGet(t, st, j.ID).Egress) != 0 {
		t.Fatalf("emptied egress kept %v", mustGet(t, st, j.ID).Egress)
	}

	if err := st.FinishJob(t.Context(), j.ID, "w", drydock.JobResult{Status: drydock.StatusComplete}); err != nil {
		t.Fatal(err)
	}
	_, err = st.SetEgress(t.Context(), j.ID, []string{"example.com"})
	wantCode(t, "SetEgress on a finished job", err, drydock.ECONFLICT)
	_, err = st.SetEgress(t.Context(), newID(t), []string{"example.com"})
	wantCode(t, "SetEgress of a missing job", err, drydock.ENOTFOUND)
}

func (s *suite) testPing(t *testing.T) {
	st := s.newStore(t)
	if err := st.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func (s *suite) testConcurrentCreate(t *testing.T) {
	st := s.newStore(t)
	ids := createMany(t, st, 200, "u")
	got, _ := listAll(t, st, drydock.JobFilter{OwnerID: "u", Limit: 500})
	if diff := cmp.Diff(newestFirst(ids), got); diff != "" {
		t.Fatalf("listed ids (-want +got):\n%s", diff)
	}
	for _, id := range ids {
		if n := len(mustEvents(t, st, id)); n != 1 {
			t.Fatalf("job %s has %d events; want 1", id, n)
		}
	}
}

// A metadata filter keeps the jobs having every pair given (what drydock
// eval's runs are listed by), across pages, with the owner's filter; keys
// and values are matched exactly, quotes and dots included.
func (s *suite) testListMetadataFilter(t *testing.T) {
	st := s.newStore(t)
	mk := func(owner string, meta map[string]string) string {
		j := newJob(t, owner)
		j.Metadata = meta
		mustCreate(t, st, j)
		return j.ID
	}
	a1 := mk("alice", map[string]string{"eval_run": "r1", "eval_task": "a"})
	mk("alice", map[string]string{"eval_run": "r2", "eval_task": "a"})
	a3 := mk("alice", map[string]string{"eval_run": "r1", "eval_task": "b", "x": "y"})
	mk("alice", nil)
	b1 := mk("bob", map[string]string{"eval_run": "r1"})
	odd := mk("alice", map[string]string{`we"ird.key`: `va'l"ue`})

	ids, _ := listAll(t, st, drydock.JobFilter{Metadata: map[string]string{"eval_run": "r1"}, Limit: 1})
	if want := []string{b1, a3, a1}; !slices.Equal(ids, want) {
		t.Errorf("eval_run r1: %v; want %v", ids, want)
	}
	ids, _ = listAll(t, st, drydock.JobFilter{OwnerID: "alice", Metadata: map[string]string{"eval_run": "r1", "eval_task": "b"}})
	if want := []string{a3}; !slices.Equal(ids, want) {
		t.Errorf("alice's eval_run r1 task b: %v; want %v", ids, want)
	}
	ids, _ = listAll(t, st, drydock.JobFilter{Metadata: map[string]string{`we"ird.key`: `va'l"ue`}})
	if want := []string{odd}; !slices.Equal(ids, want) {
		t.Errorf("a key with a quote and a dot: %v; want %v", ids, want)
	}
	for _, f := range []map[string]string{{"eval_run": "r"}, {"eval_run": "R1"}, {"missing": ""}} {
		if ids, _ := listAll(t, st, drydock.JobFilter{Metadata: f}); len(ids) != 0 {
			t.Errorf("filter %v matched %v; want nothing", f, ids)
		}
	}
}
