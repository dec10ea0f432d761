package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drydockhq/drydock"
)

func (s *suite) durabilityTests() map[string]func(t *testing.T) {
	return map[string]func(t *testing.T){
		"CloseIdempotent": s.testCloseIdempotent,
		"Reopen":          s.testReopen,
		"CloseDrains":     s.testCloseDrains,
	}
}

func (s *suite) testCloseIdempotent(t *testing.T) {
	st := s.newStore(t)
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := st.CreateJob(t.Context(), newJob(t, "u")); err == nil {
		t.Fatal("CreateJob on a closed store succeeded")
	}
}

func (s *suite) requireReopen(t *testing.T) {
	if s.reopen == nil {
		t.Skip("the backend gave no reopen hook (storetest.WithReopen)")
	}
}

// testReopen puts a job in every state, events and tokens into a store, and
// checks that a reopened store holds exactly the same.
func (s *suite) testReopen(t *testing.T) {
	s.requireReopen(t)
	st := s.newStore(t)
	ctx := t.Context()

	var ids []string
	for range 5 {
		ids = append(ids, mustCreate(t, st, newJob(t, "u")).ID)
	}
	finished := mustClaim(t, st, "w", time.Hour)
	if err := st.FinishJob(ctx, finished.ID, "w", drydock.JobResult{Status: drydock.StatusComplete, Summary: "ok", ArtifactKey: "a", ArtifactSize: 1}); err != nil {
		t.Fatal(err)
	}
	running := mustClaim(t, st, "w", time.Hour)
	sb := "sb-1"
	if err := st.UpdateProgress(ctx, running.ID, "w", drydock.JobProgress{Steps: 3, SandboxID: &sb, Usage: drydock.Usage{InputTokens: 7, CostUSD: 0.25}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CancelJob(ctx, running.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CancelJob(ctx, ids[4]); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvent(ctx, drydock.NewEvent(running.ID, drydock.EventLog, map[string]string{"message": "hi"})); err != nil {
		t.Fatal(err)
	}
	tok := &drydock.Token{ID: "tok-1", Name: "a", Admin: true, CreatedAt: ts(time.Now()), Hash: hashOf("s")}
	if err := st.CreateToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	revoked := &drydock.Token{ID: "tok-2", Name: "b", CreatedAt: ts(time.Now()), Hash: hashOf("s2")}
	if err := st.CreateToken(ctx, revoked); err != nil {
		t.Fatal(err)
	}
	if err := st.RevokeToken(ctx, revoked.ID); err != nil {
		t.Fatal(err)
	}

	wantJobs, _, err := st.ListJobs(ctx, drydock.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	wantEvents := map[string][]*drydock.Event{}
	for _, id := range ids {
		wantEvents[id] = mustEvents(t, st, id)
	}
	wantTokens, err := st.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}

	st = s.reopen(t, st)

	gotJobs, _, err := st.ListJobs(ctx, drydock.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantJobs, gotJobs, jobOpts); diff != "" {
		t.Errorf("jobs after reopen (-want +got):\n%s", diff)
	}
	for _, id := range ids {
		got := mustEvents(t, st, id)
		if len(got) != len(wantEvents[id]) {
			t.Fatalf("job %s: %d events after reopen; want %d", id, len(got), len(wantEvents[id]))
		}
		for i, e := range got {
			w := wantEvents[id][i]
			if e.Seq != w.Seq || e.Type != w.Type || !e.Time.Equal(w.Time) {
				t.Errorf("job %s event %d after reopen = %+v; want %+v", id, i, e, w)
			}
			sameJSON(t, "event after reopen", e.Data, string(w.Data))
		}
	}
	gotTokens, err := st.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantTokens, gotTokens); diff != "" {
		t.Errorf("tokens after reopen (-want +got):\n%s", diff)
	}
	if n, err := st.CountTokens(ctx); err != nil || n != 1 {
		t.Errorf("CountTokens after reopen = %d, %v; want 1", n, err)
	}

	// The reopened store keeps working where the old one stopped: seqs
	// continue, the queue still holds the pending jobs, leases still hold.
	e := drydock.NewEvent(running.ID, drydock.EventLog, "after reopen")
	if err := st.AppendEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	if want := int64(len(wantEvents[running.ID]) + 1); e.Seq != want {
		t.Errorf("first seq after reopen = %d; want %d", e.Seq, want)
	}
	if _, err := st.RenewLease(ctx, running.ID, "w", time.Hour); err != nil {
		t.Errorf("RenewLease after reopen: %v", err)
	}
	for _, id := range ids[2:4] {
		if j := mustClaim(t, st, "w2", time.Hour); j.ID != id {
			t.Errorf("claimed %s after reopen; want %s", j.ID, id)
		}
	}
	claimNone(t, st, "w2")
}

// testCloseDrains closes the store while writers are busy: every write that
// was acknowledged must be there after reopening.
func (s *suite) testCloseDrains(t *testing.T) {
	s.requireReopen(t)
	st := s.newStore(t)
	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for range 16 {
		wg.Go(func() {
			<-start
			for range 50 {
				j := newJob(t, "u")
				if err := st.CreateJob(t.Context(), j); err != nil {
					return // closed
				}
				mu.Lock()
				acked = append(acked, j.ID)
				mu.Unlock()
			}
		})
	}
	close(start)
	eventually(t, "some jobs to be created", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 50
	})
	if err := st.Close(); err != nil {
		t.Fatalf("Close under load: %v", err)
	}
	wg.Wait()

	st = s.reopen(t, st)
	for _, id := range acked {
		j, err := st.GetJob(t.Context(), id)
		if err != nil {
			t.Fatalf("acknowledged job %s lost across Close: %v", id, err)
		}
		if j.Status != drydock.StatusPending {
			t.Fatalf("job %s is %s", id, j.Status)
		}
		if n := len(mustEvents(t, st, id)); n != 1 {
			t.Fatalf("job %s has %d events after reopen; want 1", id, n)
		}
	}
	t.Logf("%d jobs acknowledged before Close, all present after reopen", len(acked))
}
