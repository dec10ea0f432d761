package postgres_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/postgres"
)

// openReplicas opens n stores (n pools, as n orchestrator replicas would) on
// one new database, all at once, so that their migrations race.
func openReplicas(t *testing.T, n int) []*postgres.Store {
	t.Helper()
	dsn := newDatabase(t)
	stores := make([]*postgres.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), dsn, nil)
			stores[i], errs[i] = s, err
		})
	}
	wg.Wait()
	for i, s := range stores {
		if errs[i] != nil {
			t.Fatalf("open replica %d: %v", i, errs[i])
		}
		t.Cleanup(func() { s.Close() })
	}
	return stores
}

// TestReplicasClaimEachJobOnce runs 3 stores on one database with 8 claiming
// goroutines each over 300 jobs created through all three: every job is
// claimed exactly once, and every replica gets work.
func TestReplicasClaimEachJobOnce(t *testing.T) {
	t.Parallel()
	const replicas, workers, jobs = 3, 8, 300
	stores := openReplicas(t, replicas)
	ids := make([]string, jobs)
	var wg sync.WaitGroup
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7()).String()
	}
	for r, s := range stores {
		wg.Go(func() {
			for i := r; i < jobs; i += replicas {
				j := &drydock.Job{ID: ids[i], OwnerID: "u", JobSpec: drydock.JobSpec{Task: "t"}}
				if err := s.CreateJob(t.Context(), j); err != nil {
					t.Errorf("replica %d: CreateJob: %v", r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	var (
		mu        sync.Mutex
		claimed   = map[string][]string{} // job -> owners
		byReplica = make([]int, replicas)
	)
	start := make(chan struct{})
	for r, s := range stores {
		for w := range workers {
			owner := fmt.Sprintf("replica-%d/worker-%d", r, w)
			wg.Go(func() {
				<-start
				for {
					j, err := s.ClaimJob(t.Context(), owner, time.Hour)
					if err != nil {
						t.Errorf("ClaimJob(%s): %v", owner, err)
						return
					}
					// Every runnable row not returned here is locked by a
					// claimer that will take it, so nil means done.
					if j == nil {
						return
					}
					if j.LeaseOwner != owner || j.Attempts != 1 || j.Status != drydock.StatusRunning {
						t.Errorf("%s claimed %+v", owner, j)
					}
					mu.Lock()
					claimed[j.ID] = append(claimed[j.ID], owner)
					byReplica[r]++
					mu.Unlock()
				}
			})
		}
	}
	began := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(began)
	if t.Failed() {
		t.FailNow()
	}
	if len(claimed) != jobs {
		t.Fatalf("%d distinct jobs claimed; want %d", len(claimed), jobs)
	}
	for i, id := range ids {
		owners := claimed[id]
		if len(owners) != 1 {
			t.Fatalf("job %s claimed by %v; want exactly one owner", id, owners)
		}
		// Any replica reads what another wrote.
		got, err := stores[i%replicas].GetJob(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if got.LeaseOwner != owners[0] || got.Status != drydock.StatusRunning || got.Attempts != 1 {
			t.Fatalf("job %s stored as %+v; ClaimJob told %s", id, got, owners[0])
		}
	}
	for r, n := range byReplica {
		if n == 0 {
			t.Errorf("replica %d claimed nothing; claims per replica: %v", r, byReplica)
		}
	}
	for _, s := range stores {
		claimNone(t, s, "late")
	}
	t.Logf("%d jobs claimed once each by %d replicas × %d workers in %s (%.0f claims/s); per replica %v",
		jobs, replicas, workers, elapsed.Round(time.Millisecond), float64(jobs)/elapsed.Seconds(), byReplica)
}

// TestReplicasLeaseExpiryFailover: a job whose lease ran out on one replica
// (its worker stopped heartbeating) is claimed by another, which then owns
// it alone; its events continue from every replica without a gap.
func TestReplicasLeaseExpiryFailover(t *testing.T) {
	t.Parallel()
	stores := openReplicas(t, 3)
	a, b, c := stores[0], stores[1], stores[2]
	ctx := t.Context()

	job := &drydock.Job{ID: uuid.Must(uuid.NewV7()).String(), JobSpec: drydock.JobSpec{Task: "t"}}
	if err := a.CreateJob(ctx, job); err != nil {
		t.Fatal(err)
	}
	const ttl = 300 * time.Millisecond
	first, err := a.ClaimJob(ctx, "a/1", ttl)
	if err != nil || first == nil {
		t.Fatalf("ClaimJob on a = %v, %v", first, err)
	}
	sb := "sandbox-1"
	if err := a.UpdateProgress(ctx, job.ID, "a/1", drydock.JobProgress{Steps: 3, SandboxID: &sb}); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendEvent(ctx, drydock.NewEvent(job.ID, drydock.EventLog, "from a")); err != nil {
		t.Fatal(err)
	}
	// The lease still runs: nobody else may take the job.
	claimNone(t, b, "b/1")
	claimNone(t, c, "c/1")

	// a's worker is gone; b polls as a runner would.
	var second *drydock.Job
	deadline := time.Now().Add(5 * time.Second)
	for second == nil {
		if time.Now().After(deadline) {
			t.Fatal("b never claimed the job whose lease expired on a")
		}
		time.Sleep(20 * time.Millisecond)
		if second, err = b.ClaimJob(ctx, "b/1", time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if time.Now().Before(first.LeaseExpiresAt) {
		t.Fatalf("b claimed at %s, before a's lease ran out at %s", time.Now(), first.LeaseExpiresAt)
	}
	if second.ID != job.ID || second.LeaseOwner != "b/1" || second.Attempts != 2 || second.Steps != 3 || second.SandboxID != sb {
		t.Fatalf("b recovered %+v; want job %s, attempt 2, with a's progress and sandbox", second, job.ID)
	}
	if !second.StartedAt.Equal(*first.StartedAt) {
		t.Fatalf("recovery moved StartedAt from %s to %s", first.StartedAt, second.StartedAt)
	}
	claimNone(t, c, "c/1")

	// a's worker, were it to wake up, owns nothing.
	if _, err := a.RenewLease(ctx, job.ID, "a/1", time.Hour); drydock.ErrorCode(err) != drydock.ELEASELOST {
		t.Fatalf("RenewLease by a after takeover: %v; want ELEASELOST", err)
	}
	err = a.FinishJob(ctx, job.ID, "a/1", drydock.JobResult{Status: drydock.StatusComplete})
	if drydock.ErrorCode(err) != drydock.ELEASELOST {
		t.Fatalf("FinishJob by a after takeover: %v; want ELEASELOST", err)
	}

	// b carries on; events appended through any replica share one sequence.
	var wg sync.WaitGroup
	for r, s := range stores {
		wg.Go(func() {
			for i := range 40 {
				if err := s.AppendEvent(ctx, drydock.NewEvent(job.ID, drydock.EventLog, map[string]int{"replica": r, "i": i})); err != nil {
					t.Errorf("replica %d: AppendEvent: %v", r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := b.FinishJob(ctx, job.ID, "b/1", drydock.JobResult{Status: drydock.StatusComplete, Summary: "done by b"}); err != nil {
		t.Fatal(err)
	}

	got, err := c.GetJob(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != drydock.StatusComplete || got.Summary != "done by b" || got.LeaseOwner != "" {
		t.Fatalf("c sees %+v; want complete by b, lease dropped", got)
	}
	es, err := c.ListEvents(ctx, job.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	// pending, "from a", 3×40 appends, complete.
	if len(es) != 1+1+3*40+1 {
		t.Fatalf("%d events; want %d", len(es), 1+1+3*40+1)
	}
	last := map[int]int{}
	for i, e := range es {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: gap or duplicate", i, e.Seq)
		}
		if i < 2 || i == len(es)-1 {
			continue
		}
		var d struct{ Replica, I int }
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		if prev, ok := last[d.Replica]; ok && d.I <= prev {
			t.Fatalf("replica %d: event %d came after %d", d.Replica, d.I, prev)
		}
		last[d.Replica] = d.I
	}
}

func claimNone(t *testing.T, s drydock.Store, owner string) {
	t.Helper()
	j, err := s.ClaimJob(t.Context(), owner, time.Hour)
	if err != nil {
		t.Fatalf("ClaimJob(%s): %v", owner, err)
	}
	if j != nil {
		t.Fatalf("ClaimJob(%s) = job %s (%s, lease %s until %s); want none", owner, j.ID, j.Status, j.LeaseOwner, j.LeaseExpiresAt)
	}
}
