package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

func (s *suite) idempotencyTests() map[string]func(t *testing.T) {
	return map[string]func(t *testing.T){
		"CreatesOnce":          s.testOnceCreates,
		"ReplaysTheOriginal":   s.testOnceReplays,
		"RefusesAnotherBody":   s.testOnceRefusesAnotherFingerprint,
		"KeysBelongToAnOwner":  s.testOnceScopedToOwner,
		"ExpiredKeyIsFree":     s.testOnceExpired,
		"PurgeDeletesExpired":  s.testOncePurge,
		"InvalidKeys":          s.testOnceInvalid,
		"ConcurrentTwinsOne":   s.testOnceConcurrent,
		"ConcurrentMixedBody":  s.testOnceConcurrentMixed,
		"ReplayShowsNowState":  s.testOnceReplayCurrentState,
		"FailedCreateFreesKey": s.testOnceFailedCreate,
		"SurvivesReopen":       s.testOnceSurvivesReopen,
	}
}

func ikey(key, fingerprint string, ttl time.Duration) drydock.IdempotencyKey {
	return drydock.IdempotencyKey{Key: key, Fingerprint: []byte(fingerprint), TTL: ttl}
}

// createOnce calls CreateJobOnce and fails the test on an error.
func createOnce(t *testing.T, st drydock.Store, j *drydock.Job, k drydock.IdempotencyKey) (*drydock.Job, bool) {
	t.Helper()
	got, created, err := st.CreateJobOnce(t.Context(), j, k)
	if err != nil {
		t.Fatalf("CreateJobOnce(%s, key %q): %v", j.ID, k.Key, err)
	}
	return got, created
}

// jobCount counts the jobs of owner.
func jobCount(t *testing.T, st drydock.Store, owner string) int {
	t.Helper()
	js, _, err := st.ListJobs(t.Context(), drydock.JobFilter{OwnerID: owner, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	return len(js)
}

func (s *suite) testOnceCreates(t *testing.T) {
	st := s.newStore(t)
	j := newJob(t, "tok-a")
	got, created := createOnce(t, st, j, ikey("k1", "fp-1", time.Hour))
	if !created || got != j || j.Status != drydock.StatusPending {
		t.Fatalf("first use of a key: created=%v, same job %v, status %q; want a new pending job", created, got == j, j.Status)
	}
	stored := mustGet(t, st, j.ID)
	if stored.Task != j.Task || stored.OwnerID != "tok-a" {
		t.Errorf("stored job %+v", stored)
	}
	if es := mustEvents(t, st, j.ID); len(es) != 1 || es[0].Type != drydock.EventStatus {
		t.Errorf("a job created under a key has events %v; want its one status event", es)
	}
}

func (s *suite) testOnceReplays(t *testing.T) {
	st := s.newStore(t)
	first := newJob(t, "tok-a")
	createOnce(t, st, first, ikey("k1", "fp-1", time.Hour))
	retry := newJob(t, "tok-a") // a retry gets a fresh id from the API
	got, created := createOnce(t, st, retry, ikey("k1", "fp-1", time.Hour))
	if created || got.ID != first.ID {
		t.Fatalf("retry with the same key and body: created=%v, job %s; want the original %s", created, got.ID, first.ID)
	}
	if !got.CreatedAt.Equal(first.CreatedAt) || got.Task != first.Task || got.OwnerID != "tok-a" {
		t.Errorf("replayed job %+v; want the stored original %+v", got, first)
	}
	if _, err := st.GetJob(t.Context(), retry.ID); drydock.ErrorCode(err) != drydock.ENOTFOUND {
		t.Errorf("the retry's own job id %s: %v; want ENOTFOUND (never stored)", retry.ID, err)
	}
	if n := jobCount(t, st, "tok-a"); n != 1 {
		t.Errorf("%d jobs after a replay; want 1", n)
	}
}

func (s *suite) testOnceRefusesAnotherFingerprint(t *testing.T) {
	st := s.newStore(t)
	createOnce(t, st, newJob(t, "tok-a"), ikey("k1", "fp-1", time.Hour))
	_, _, err := st.CreateJobOnce(t.Context(), newJob(t, "tok-a"), ikey("k1", "fp-2", time.Hour))
	wantCode(t, "same key, another fingerprint", err, drydock.EKEYREUSED)
	if msg := drydock.ErrorMessage(err); !strings.Contains(msg, `"k1"`) || !strings.Contains(msg, "another request") {
		t.Errorf("message %q does not name the key and say it was used for another request", msg)
	}
	if n := jobCount(t, st, "tok-a"); n != 1 {
		t.Errorf("%d jobs after a refused reuse; want 1", n)
	}
}

func (s *suite) testOnceScopedToOwner(t *testing.T) {
	st := s.newStore(t)
	a, _ := createOnce(t, st, newJob(t, "tok-a"), ikey("shared", "fp-1", time.Hour))
	// Another owner's key of the same name is another key, whatever the body.
	b, created := createOnce(t, st, newJob(t, "tok-b"), ikey("shared", "fp-1", time.Hour))
	if !created || b.ID == a.ID || b.OwnerID != "tok-b" {
		t.Fatalf("another owner's key: created=%v job %s (owner %q); want a new job of tok-b", created, b.ID, b.OwnerID)
	}
	c, created := createOnce(t, st, newJob(t, "tok-b"), ikey("shared", "fp-1", time.Hour))
	if created || c.ID != b.ID {
		t.Errorf("tok-b's retry: created=%v job %s; want tok-b's %s", created, c.ID, b.ID)
	}
}

func (s *suite) testOnceExpired(t *testing.T) {
	st := s.newStore(t)
	first, _ := createOnce(t, st, newJob(t, "tok-a"), ikey("k1", "fp-1", 50*time.Millisecond))
	time.Sleep(120 * time.Millisecond)
	// An expired key is free again, even for another body, whether or not
	// it was purged yet.
	second, created := createOnce(t, st, newJob(t, "tok-a"), ikey("k1", "fp-2", time.Hour))
	if !created || second.ID == first.ID {
		t.Fatalf("expired key: created=%v job %s; want a new job", created, second.ID)
	}
	third, created := createOnce(t, st, newJob(t, "tok-a"), ikey("k1", "fp-2", time.Hour))
	if created || third.ID != second.ID {
		t.Errorf("the renewed key: created=%v job %s; want %s", created, third.ID, second.ID)
	}
}

func (s *suite) testOncePurge(t *testing.T) {
	st := s.newStore(t)
	for i := range 3 {
		createOnce(t, st, newJob(t, "tok-a"), ikey(fmt.Sprintf("short-%d", i), "fp", 20*time.Millisecond))
	}
	live, _ := createOnce(t, st, newJob(t, "tok-a"), ikey("long", "fp", time.Hour))
	time.Sleep(80 * time.Millisecond)
	n, err := st.PurgeIdempotencyKeys(t.Context())
	if err != nil || n != 3 {
		t.Fatalf("PurgeIdempotencyKeys = %d, %v; want the 3 expired keys", n, err)
	}
	if n, err := st.PurgeIdempotencyKeys(t.Context()); err != nil || n != 0 {
		t.Errorf("second purge = %d, %v; want 0", n, err)
	}
	// Purging keys keeps their jobs; the live key still replays.
	if c := jobCount(t, st, "tok-a"); c != 4 {
		t.Errorf("%d jobs after the purge; want 4", c)
	}
	if got, created := createOnce(t, st, newJob(t, "tok-a"), ikey("long", "fp", time.Hour)); created || got.ID != live.ID {
		t.Errorf("live key after the purge: created=%v job %s; want %s", created, got.ID, live.ID)
	}
}

func (s *suite) testOnceInvalid(t *testing.T) {
	st := s.newStore(t)
	for _, k := range []drydock.IdempotencyKey{
		ikey("", "fp", time.Hour),
		ikey(strings.Repeat("k", drydock.MaxIdempotencyKeyLen+1), "fp", time.Hour),
		ikey("tab\there", "fp", time.Hour),
		ikey("é", "fp", time.Hour),
		ikey("k", "", time.Hour),
		ikey("k", "fp", 0),
	} {
		_, _, err := st.CreateJobOnce(t.Context(), newJob(t, "tok-a"), k)
		wantCode(t, fmt.Sprintf("key %q fingerprint %q ttl %s", k.Key, k.Fingerprint, k.TTL), err, drydock.EINVALID)
	}
	longest := strings.Repeat("~", drydock.MaxIdempotencyKeyLen)
	createOnce(t, st, newJob(t, "tok-a"), ikey(longest, "fp", time.Hour))
	if n := jobCount(t, st, "tok-a"); n != 1 {
		t.Errorf("%d jobs; want 1 (the longest valid key)", n)
	}
}

// N concurrent requests with one key and one body: one job, every caller
// gets it.
func (s *suite) testOnceConcurrent(t *testing.T) {
	st := s.newStore(t)
	const n = 24
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ids     = map[string]int{}
		created int
		errs    []error
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j, c, err := st.CreateJobOnce(t.Context(), newJob(t, "tok-a"), ikey("race", "fp", time.Hour))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			ids[j.ID]++
			if c {
				created++
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d concurrent twins failed: %v", len(errs), n, errs[0])
	}
	if created != 1 || len(ids) != 1 {
		t.Fatalf("%d concurrent twins: %d created, job ids %v; want one job for all", n, created, ids)
	}
	if c := jobCount(t, st, "tok-a"); c != 1 {
		t.Errorf("%d jobs stored; want 1", c)
	}
}

// Concurrent requests with one key and two bodies: one job; the callers
// with its body get it, the others EKEYREUSED.
func (s *suite) testOnceConcurrentMixed(t *testing.T) {
	st := s.newStore(t)
	const n = 16
	type result struct {
		fp      string
		id      string
		created bool
		err     error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fp := []string{"fp-x", "fp-y"}[i%2]
			j, c, err := st.CreateJobOnce(t.Context(), newJob(t, "tok-a"), ikey("mixed", fp, time.Hour))
			results[i] = result{fp: fp, created: c, err: err}
			if j != nil {
				results[i].id = j.ID
			}
		}()
	}
	wg.Wait()
	var winner result
	for _, r := range results {
		if r.created {
			if winner.created {
				t.Fatalf("two jobs created under one key: %s and %s", winner.id, r.id)
			}
			winner = r
		}
	}
	if !winner.created {
		t.Fatalf("no job created: %+v", results)
	}
	for _, r := range results {
		switch {
		case r.fp == winner.fp && (r.err != nil || r.id != winner.id):
			t.Errorf("a twin of the winner got job %s, %v; want %s", r.id, r.err, winner.id)
		case r.fp != winner.fp:
			wantCode(t, "the other body", r.err, drydock.EKEYREUSED)
		}
	}
	if c := jobCount(t, st, "tok-a"); c != 1 {
		t.Errorf("%d jobs stored; want 1", c)
	}
}

// A replay returns the job as it is now, not as it was created.
func (s *suite) testOnceReplayCurrentState(t *testing.T) {
	st := s.newStore(t)
	first, _ := createOnce(t, st, newJob(t, "tok-a"), ikey("k1", "fp", time.Hour))
	mustClaim(t, st, "worker", time.Hour)
	got, created := createOnce(t, st, newJob(t, "tok-a"), ikey("k1", "fp", time.Hour))
	if created || got.ID != first.ID || got.Status != drydock.StatusRunning {
		t.Errorf("replay of a claimed job: created=%v job %s status %s; want %s running", created, got.ID, got.Status, first.ID)
	}
}

// A create that fails records no key: the key stays free for the retry.
func (s *suite) testOnceFailedCreate(t *testing.T) {
	st := s.newStore(t)
	taken := mustCreate(t, st, newJob(t, "tok-a"))
	dup := newJob(t, "tok-a")
	dup.ID = taken.ID
	_, _, err := st.CreateJobOnce(t.Context(), dup, ikey("k1", "fp", time.Hour))
	wantCode(t, "create with a taken job id", err, drydock.ECONFLICT)
	got, created := createOnce(t, st, newJob(t, "tok-a"), ikey("k1", "fp-other", time.Hour))
	if !created || got.ID == taken.ID {
		t.Errorf("the key after a failed create: created=%v job %s; want a new job", created, got.ID)
	}
}

// A key outlives a restart of the store: the retry after a crash is the
// case keys exist for.
func (s *suite) testOnceSurvivesReopen(t *testing.T) {
	if s.reopen == nil {
		t.Skip("the backend gave no reopen hook (storetest.WithReopen)")
	}
	st := s.newStore(t)
	first, _ := createOnce(t, st, newJob(t, "tok-a"), ikey("k1", "fp", time.Hour))
	st = s.reopen(t, st)
	got, created := createOnce(t, st, newJob(t, "tok-a"), ikey("k1", "fp", time.Hour))
	if created || got.ID != first.ID {
		t.Errorf("retry after reopen: created=%v job %s; want %s", created, got.ID, first.ID)
	}
}
