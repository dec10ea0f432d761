package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

func (s *suite) queueTests() map[string]func(t *testing.T) {
	return map[string]func(t *testing.T){
		"ClaimEmpty":          s.testClaimEmpty,
		"ClaimOldestFirst":    s.testClaimOldestFirst,
		"ClaimInvalid":        s.testClaimInvalid,
		"RenewLease":          s.testRenewLease,
		"LeaseExpiryRecovery": s.testLeaseExpiryRecovery,
		"ReleaseLease":        s.testReleaseLease,
		"ExpireLeases":        s.testExpireLeases,
		"UpdateProgress":      s.testUpdateProgress,
		"FinishJob":           s.testFinishJob,
		"FinishErrors":        s.testFinishErrors,
		"LeaseLostAndMissing": s.testLeaseErrors,
		"ConcurrentClaims":    s.testConcurrentClaims,
	}
}

func (s *suite) testClaimEmpty(t *testing.T) {
	st := s.newStore(t)
	claimNone(t, st, "w")
}

func (s *suite) testClaimOldestFirst(t *testing.T) {
	st := s.newStore(t)
	base := ts(time.Now().Add(-time.Hour))
	// Ids sort in creation-call order; CreatedAt does not. Claims follow
	// CreatedAt.
	var jobs []*drydock.Job
	for _, offset := range []time.Duration{3, 1, 2} {
		j := newJob(t, "u")
		j.CreatedAt = base.Add(offset * time.Second)
		jobs = append(jobs, mustCreate(t, st, j))
	}
	want := []string{jobs[1].ID, jobs[2].ID, jobs[0].ID}
	for i, id := range want {
		before := time.Now()
		j := mustClaim(t, st, "worker-1", time.Minute)
		after := time.Now()
		if j.ID != id {
			t.Fatalf("claim %d took %s; want %s", i, j.ID, id)
		}
		if j.Status != drydock.StatusRunning || j.LeaseOwner != "worker-1" || j.Attempts != 1 || j.StartedAt == nil {
			t.Fatalf("claimed job = %+v; want running, leased to worker-1, attempt 1, started", j)
		}
		within(t, "StartedAt", *j.StartedAt, before, after)
		within(t, "LeaseExpiresAt", j.LeaseExpiresAt, before.Add(time.Minute), after.Add(time.Minute))
		got := mustGet(t, st, id)
		if got.Status != drydock.StatusRunning || got.LeaseOwner != "worker-1" || !got.LeaseExpiresAt.Equal(j.LeaseExpiresAt) || got.Attempts != 1 {
			t.Fatalf("stored claimed job = %+v", got)
		}
	}
	claimNone(t, st, "worker-2")
}

func (s *suite) testClaimInvalid(t *testing.T) {
	st := s.newStore(t)
	mustCreate(t, st, newJob(t, "u"))
	_, err := st.ClaimJob(t.Context(), "", time.Minute)
	wantCode(t, "ClaimJob without owner", err, drydock.EINVALID)
	_, err = st.ClaimJob(t.Context(), "w", 0)
	wantCode(t, "ClaimJob with ttl 0", err, drydock.EINVALID)
	// The job is still there for a valid claim.
	mustClaim(t, st, "w", time.Minute)
}

func (s *suite) testRenewLease(t *testing.T) {
	st := s.newStore(t)
	mustCreate(t, st, newJob(t, "u"))
	j := mustClaim(t, st, "w", time.Minute)

	before := time.Now()
	renewed, err := st.RenewLease(t.Context(), j.ID, "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	within(t, "renewed LeaseExpiresAt", renewed.LeaseExpiresAt, before.Add(time.Hour), time.Now().Add(time.Hour))
	if renewed.Status != drydock.StatusRunning || renewed.LeaseOwner != "w" || renewed.Attempts != 1 || renewed.CancelRequested {
		t.Fatalf("renewed job = %+v", renewed)
	}
	if got := mustGet(t, st, j.ID); !got.LeaseExpiresAt.Equal(renewed.LeaseExpiresAt) {
		t.Fatalf("stored lease expiry %s; RenewLease returned %s", got.LeaseExpiresAt, renewed.LeaseExpiresAt)
	}

	// A renewal carries cancel requests to the worker.
	if _, err := st.CancelJob(t.Context(), j.ID); err != nil {
		t.Fatal(err)
	}
	renewed, err = st.RenewLease(t.Context(), j.ID, "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !renewed.CancelRequested || renewed.Status != drydock.StatusRunning {
		t.Fatalf("after a cancel request, RenewLease returned %+v; want running with CancelRequested", renewed)
	}

	_, err = st.RenewLease(t.Context(), j.ID, "w", 0)
	wantCode(t, "RenewLease with ttl 0", err, drydock.EINVALID)
}

func (s *suite) testLeaseExpiryRecovery(t *testing.T) {
	st := s.newStore(t)
	mustCreate(t, st, newJob(t, "u"))
	first := mustClaim(t, st, "dead-worker", 50*time.Millisecond)
	if err := st.UpdateProgress(t.Context(), first.ID, "dead-worker", drydock.JobProgress{Steps: 2}); err != nil {
		t.Fatal(err)
	}
	claimNone(t, st, "rescuer") // the lease still runs

	var second *drydock.Job
	eventually(t, "the expired lease to be claimable", func() bool {
		j, err := st.ClaimJob(t.Context(), "rescuer", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		second = j
		return j != nil
	})
	if time.Since(first.LeaseExpiresAt) < 0 {
		t.Fatalf("claimed at %s, before the lease expired at %s", time.Now(), first.LeaseExpiresAt)
	}
	if second.ID != first.ID || second.LeaseOwner != "rescuer" || second.Attempts != 2 || second.Status != drydock.StatusRunning {
		t.Fatalf("recovered job = %+v; want %s leased to rescuer, attempt 2", second, first.ID)
	}
	if !second.StartedAt.Equal(*first.StartedAt) {
		t.Fatalf("recovery moved StartedAt from %s to %s", first.StartedAt, second.StartedAt)
	}
	if second.Steps != 2 {
		t.Fatalf("recovery lost progress: Steps = %d", second.Steps)
	}

	// The dead worker, were it to wake up, owns nothing any more.
	_, err := st.RenewLease(t.Context(), first.ID, "dead-worker", time.Hour)
	wantCode(t, "RenewLease by the old owner", err, drydock.ELEASELOST)
	err = st.UpdateProgress(t.Context(), first.ID, "dead-worker", drydock.JobProgress{Steps: 9})
	wantCode(t, "UpdateProgress by the old owner", err, drydock.ELEASELOST)
	err = st.ReleaseLease(t.Context(), first.ID, "dead-worker")
	wantCode(t, "ReleaseLease by the old owner", err, drydock.ELEASELOST)
	err = st.FinishJob(t.Context(), first.ID, "dead-worker", drydock.JobResult{Status: drydock.StatusComplete})
	wantCode(t, "FinishJob by the old owner", err, drydock.ELEASELOST)

	if _, err := st.RenewLease(t.Context(), first.ID, "rescuer", time.Hour); err != nil {
		t.Fatalf("RenewLease by the new owner: %v", err)
	}
	if got := mustGet(t, st, first.ID); got.Steps != 2 || got.Status != drydock.StatusRunning {
		t.Fatalf("the old owner changed the job: %+v", got)
	}
}

func (s *suite) testReleaseLease(t *testing.T) {
	st := s.newStore(t)
	mustCreate(t, st, newJob(t, "u"))
	j := mustClaim(t, st, "stopping", time.Hour)
	if err := st.ReleaseLease(t.Context(), j.ID, "stopping"); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, st, j.ID); got.Status != drydock.StatusRunning {
		t.Fatalf("a released job is %s; want still running", got.Status)
	}
	// The releasing worker gave the job up: a late heartbeat cannot take it
	// back.
	_, err := st.RenewLease(t.Context(), j.ID, "stopping", time.Hour)
	wantCode(t, "RenewLease after ReleaseLease", err, drydock.ELEASELOST)
	_, err = st.RenewLease(t.Context(), j.ID, "", time.Hour)
	wantCode(t, "RenewLease by the empty owner", err, drydock.ELEASELOST)

	// No waiting for the hour-long TTL.
	again := mustClaim(t, st, "next", time.Hour)
	if again.ID != j.ID || again.Attempts != 2 || again.LeaseOwner != "next" {
		t.Fatalf("claim after release = %+v", again)
	}
}

func (s *suite) testExpireLeases(t *testing.T) {
	st := s.newStore(t)
	owners := []string{"srv-1/a", "srv-1/b", "srv-1/c", "srv-2/a", "SRV-1/d", "srv-1x", "other", "srv-1/e"}
	leased := map[string]string{} // owner -> job
	for range owners {
		mustCreate(t, st, newJob(t, "u"))
	}
	for _, o := range owners {
		ttl := time.Hour
		if o == "srv-1/e" {
			// Claimed last, or the claims after it would take its job back.
			ttl = time.Microsecond
		}
		leased[o] = mustClaim(t, st, o, ttl).ID
	}
	time.Sleep(2 * time.Millisecond) // srv-1/e's lease runs out
	// A released lease has no owner left to match.
	if err := st.ReleaseLease(t.Context(), leased["srv-1/c"], "srv-1/c"); err != nil {
		t.Fatal(err)
	}
	n, err := st.ExpireLeases(t.Context(), "srv-1/", "srv-1/b")
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("ExpireLeases(srv-1/, keep srv-1/b) = %d; want 2 (srv-1/a, and srv-1/e whose lease ran out)", n)
	}
	_, err = st.RenewLease(t.Context(), leased["srv-1/a"], "srv-1/a", time.Hour)
	wantCode(t, "RenewLease by an expired owner", err, drydock.ELEASELOST)
	if _, err := st.RenewLease(t.Context(), leased["srv-1/b"], "srv-1/b", time.Hour); err != nil {
		t.Fatalf("RenewLease by the kept owner: %v", err)
	}

	recovered := map[string]bool{}
	for range 3 {
		recovered[mustClaim(t, st, "srv-3/a", time.Hour).ID] = true
	}
	claimNone(t, st, "srv-3/a")
	for _, o := range []string{"srv-1/a", "srv-1/c", "srv-1/e"} {
		if !recovered[leased[o]] {
			t.Fatalf("recovered %v; want the jobs of srv-1/a, srv-1/c and srv-1/e", recovered)
		}
	}

	// Prefix characters are literal, not patterns, and case counts.
	for _, prefix := range []string{"srv%", "srv_1", "SRV-1/b", "nobody/"} {
		if n, err := st.ExpireLeases(t.Context(), prefix, ""); err != nil || n != 0 {
			t.Fatalf("ExpireLeases(%q) = %d, %v; want 0", prefix, n, err)
		}
	}
	claimNone(t, st, "srv-3/b")

	// An empty prefix matches every owner.
	n, err = st.ExpireLeases(t.Context(), "", "srv-3/a")
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 { // srv-1/b, srv-2/a, SRV-1/d, srv-1x, other
		t.Fatalf("ExpireLeases(\"\", keep srv-3/a) = %d; want 5", n)
	}
	if n, err := st.ExpireLeases(t.Context(), "", "srv-3/a"); err != nil || n != 0 {
		t.Fatalf("second ExpireLeases = %d, %v; want 0: the leases are already released", n, err)
	}
	for range 5 {
		mustClaim(t, st, "srv-4/a", time.Hour)
	}
	claimNone(t, st, "srv-4/a")
}

func (s *suite) testUpdateProgress(t *testing.T) {
	st := s.newStore(t)
	mustCreate(t, st, newJob(t, "u"))
	j := mustClaim(t, st, "w", time.Hour)
	sandbox, isolation := "sb-123", drydock.IsolationGVisor
	if got := mustGet(t, st, j.ID); got.Isolation != "" {
		t.Fatalf("a job without a sandbox has isolation %q", got.Isolation)
	}
	usage := drydock.Usage{InputTokens: 1000, OutputTokens: 200, CacheReadTokens: 30, CacheWriteTokens: 4, CostUSD: 0.125}
	if err := st.UpdateProgress(t.Context(), j.ID, "w", drydock.JobProgress{Steps: 3, Usage: usage, SandboxID: &sandbox, Isolation: &isolation}); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, st, j.ID)
	if got.Steps != 3 || got.Usage != usage || got.SandboxID != sandbox || got.Isolation != isolation {
		t.Fatalf("after UpdateProgress: steps %d usage %+v sandbox %q isolation %q", got.Steps, got.Usage, got.SandboxID, got.Isolation)
	}
	// Totals replace the previous ones; a nil sandbox keeps the known one.
	usage2 := drydock.Usage{InputTokens: 5000, OutputTokens: 900, CostUSD: 0.5}
	if err := st.UpdateProgress(t.Context(), j.ID, "w", drydock.JobProgress{Steps: 7, Usage: usage2}); err != nil {
		t.Fatal(err)
	}
	got = mustGet(t, st, j.ID)
	if got.Steps != 7 || got.Usage != usage2 || got.SandboxID != sandbox || got.Isolation != isolation {
		t.Fatalf("after second UpdateProgress: steps %d usage %+v sandbox %q isolation %q", got.Steps, got.Usage, got.SandboxID, got.Isolation)
	}
	jobs, _, err := st.ListJobs(t.Context(), drydock.JobFilter{OwnerID: "u"})
	if err != nil || len(jobs) != 1 || jobs[0].Isolation != isolation {
		t.Fatalf("ListJobs: %v %v; want the job with its isolation", jobs, err)
	}
}

func (s *suite) testFinishJob(t *testing.T) {
	tests := []struct {
		name       string
		result     drydock.JobResult
		wantEvent  string
		wantArtKey string
		wantSize   int64
	}{
		{"complete with artifact",
			drydock.JobResult{Status: drydock.StatusComplete, Summary: "wrote haiku.txt", ArtifactKey: "jobs/x.tar", ArtifactSize: 4096},
			`{"status":"complete"}`, "jobs/x.tar", 4096},
		{"error",
			drydock.JobResult{Status: drydock.StatusError, Error: "sandbox died"},
			`{"status":"error","error":"sandbox died"}`, "", 0},
		{"cancelled",
			drydock.JobResult{Status: drydock.StatusCancelled, Error: "cancelled by user", Summary: "stopped early"},
			`{"status":"cancelled","error":"cancelled by user"}`, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := s.newStore(t)
			mustCreate(t, st, newJob(t, "u"))
			j := mustClaim(t, st, "w", time.Hour)
			if err := st.UpdateProgress(t.Context(), j.ID, "w", drydock.JobProgress{Steps: 4}); err != nil {
				t.Fatal(err)
			}
			before := time.Now()
			if err := st.FinishJob(t.Context(), j.ID, "w", tt.result); err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			got := mustGet(t, st, j.ID)
			if got.Status != tt.result.Status || got.Error != tt.result.Error || got.Summary != tt.result.Summary {
				t.Errorf("finished job: status %q error %q summary %q; want %+v", got.Status, got.Error, got.Summary, tt.result)
			}
			if got.FinishedAt == nil {
				t.Fatal("FinishedAt not set")
			}
			within(t, "FinishedAt", *got.FinishedAt, before, after)
			if got.LeaseOwner != "" || !got.LeaseExpiresAt.IsZero() {
				t.Errorf("lease not dropped: owner %q until %s", got.LeaseOwner, got.LeaseExpiresAt)
			}
			if got.ArtifactKey != tt.wantArtKey || got.ArtifactSize != tt.wantSize {
				t.Errorf("artifact %q (%d); want %q (%d)", got.ArtifactKey, got.ArtifactSize, tt.wantArtKey, tt.wantSize)
			}
			if got.Steps != 4 || got.Attempts != 1 || got.StartedAt == nil {
				t.Errorf("FinishJob changed other fields: %+v", got)
			}
			es := mustEvents(t, st, j.ID)
			if len(es) != 2 {
				t.Fatalf("%d events; want 2", len(es))
			}
			last := es[1]
			if last.Seq != 2 || last.Type != drydock.EventStatus {
				t.Fatalf("last event = %+v; want seq 2, status", last)
			}
			sameJSON(t, "status event", last.Data, tt.wantEvent)

			// Finished jobs are never claimed again, not even when their
			// (dropped) lease would have expired.
			claimNone(t, st, "w2")
			err := st.FinishJob(t.Context(), j.ID, "w", tt.result)
			wantCode(t, "FinishJob twice", err, drydock.ELEASELOST)
		})
	}
}

func (s *suite) testFinishErrors(t *testing.T) {
	st := s.newStore(t)
	mustCreate(t, st, newJob(t, "u"))
	j := mustClaim(t, st, "w", time.Hour)
	for _, status := range []drydock.JobStatus{drydock.StatusPending, drydock.StatusRunning, "", "done"} {
		err := st.FinishJob(t.Context(), j.ID, "w", drydock.JobResult{Status: status})
		wantCode(t, fmt.Sprintf("FinishJob as %q", status), err, drydock.EINVALID)
	}
	if got := mustGet(t, st, j.ID); got.Status != drydock.StatusRunning || got.LeaseOwner != "w" {
		t.Fatalf("rejected finishes changed the job: %+v", got)
	}
	if n := len(mustEvents(t, st, j.ID)); n != 1 {
		t.Fatalf("rejected finishes left events: %d; want 1", n)
	}
}

// testLeaseErrors checks every lease-guarded method against a missing job
// (ENOTFOUND), a job held by someone else, and a job not running
// (ELEASELOST).
func (s *suite) testLeaseErrors(t *testing.T) {
	st := s.newStore(t)
	held := mustCreate(t, st, newJob(t, "u"))
	mustClaim(t, st, "holder", time.Hour)
	pending := mustCreate(t, st, newJob(t, "u"))
	missing := newID(t)

	ops := map[string]func(id, owner string) error{
		"RenewLease": func(id, owner string) error {
			_, err := st.RenewLease(t.Context(), id, owner, time.Minute)
			return err
		},
		"ReleaseLease": func(id, owner string) error {
			return st.ReleaseLease(t.Context(), id, owner)
		},
		"UpdateProgress": func(id, owner string) error {
			return st.UpdateProgress(t.Context(), id, owner, drydock.JobProgress{Steps: 1})
		},
		"FinishJob": func(id, owner string) error {
			return st.FinishJob(t.Context(), id, owner, drydock.JobResult{Status: drydock.StatusComplete})
		},
	}
	cases := []struct {
		name, id, owner, code string
	}{
		{"missing job", missing, "holder", drydock.ENOTFOUND},
		{"another owner", held.ID, "intruder", drydock.ELEASELOST},
		{"empty owner", held.ID, "", drydock.ELEASELOST},
		{"pending job", pending.ID, "holder", drydock.ELEASELOST},
	}
	for name, op := range ops {
		for _, c := range cases {
			wantCode(t, name+" on "+c.name, op(c.id, c.owner), c.code)
		}
	}
	if got := mustGet(t, st, held.ID); got.Status != drydock.StatusRunning || got.LeaseOwner != "holder" || got.Steps != 0 {
		t.Fatalf("failed lease operations changed the job: %+v", got)
	}
	if got := mustGet(t, st, pending.ID); got.Status != drydock.StatusPending || got.Steps != 0 {
		t.Fatalf("failed lease operations changed the pending job: %+v", got)
	}
}

func (s *suite) testConcurrentClaims(t *testing.T) {
	st := s.newStore(t)
	const jobs, workers = 60, 8
	ids := createMany(t, st, jobs, "u")
	var (
		mu      sync.Mutex
		claimed = map[string][]string{} // job -> owners
		wg      sync.WaitGroup
	)
	for w := range workers {
		owner := fmt.Sprintf("worker-%d", w)
		wg.Go(func() {
			for {
				j, err := st.ClaimJob(t.Context(), owner, time.Hour)
				if err != nil {
					t.Errorf("ClaimJob(%s): %v", owner, err)
					return
				}
				if j == nil {
					return
				}
				if j.LeaseOwner != owner || j.Attempts != 1 {
					t.Errorf("%s claimed %+v", owner, j)
				}
				mu.Lock()
				claimed[j.ID] = append(claimed[j.ID], owner)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(claimed) != jobs {
		t.Fatalf("%d distinct jobs claimed; want %d", len(claimed), jobs)
	}
	for _, id := range ids {
		if owners := claimed[id]; len(owners) != 1 {
			t.Fatalf("job %s claimed by %v; want exactly one owner", id, owners)
		}
		if got := mustGet(t, st, id); got.LeaseOwner != claimed[id][0] {
			t.Fatalf("job %s is leased to %q; ClaimJob told %q", id, got.LeaseOwner, claimed[id][0])
		}
	}
}
