package storetest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// Pause and take-over: Store.ChangePause.
func (s *suite) pauseTests() map[string]func(t *testing.T) {
	return map[string]func(t *testing.T){
		"PauseResume":           s.testPauseResume,
		"PausePending":          s.testPausePending,
		"FinishedRefused":       s.testPauseFinished,
		"Missing":               s.testPauseMissing,
		"ControlExclusive":      s.testControlExclusive,
		"ControlDuringPause":    s.testControlDuringPause,
		"ControlExpires":        s.testControlExpires,
		"EndPauseLiftsAll":      s.testEndPause,
		"FinishEndsThePause":    s.testFinishEndsPause,
		"LeaseRenewalSeesPause": s.testRenewSeesPause,
	}
}

func mustPause(t *testing.T, st drydock.Store, id string, c drydock.PauseChange) *drydock.Job {
	t.Helper()
	j, err := st.ChangePause(t.Context(), id, c)
	if err != nil {
		t.Fatalf("ChangePause(%s, %+v): %v", id, c, err)
	}
	return j
}

// pauseEvents returns the paused/resumed events of a job, checking that
// the log's seqs stay gapless.
func pauseEvents(t *testing.T, st drydock.Store, id string) []drydock.PauseEvent {
	t.Helper()
	var out []drydock.PauseEvent
	for i, e := range mustEvents(t, st, id) {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d; the log must have no gaps", i+1, e.Seq)
		}
		if e.Type != drydock.EventPaused && e.Type != drydock.EventResumed {
			continue
		}
		var p drydock.PauseEvent
		if err := json.Unmarshal(e.Data, &p); err != nil {
			t.Fatalf("%s event data %s: %v", e.Type, e.Data, err)
		}
		if ends := e.Type == drydock.EventResumed && !p.StillPaused; ends != (p.From != nil && p.To != nil) {
			t.Fatalf("%s event %s: a resumed event that ends the pause, and only that, has from/to", e.Type, e.Data)
		}
		out = append(out, p)
	}
	return out
}

func (s *suite) testPauseResume(t *testing.T) {
	st := s.newStore(t)
	mustCreate(t, st, newJob(t, "u"))
	j := mustClaim(t, st, "w", time.Hour)
	before := time.Now()
	p := mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpPause, By: "alice"})
	if !p.Paused || p.PausedAt == nil || p.PausedBy != "alice" || p.Status != drydock.StatusRunning {
		t.Fatalf("paused job = %+v; want running, paused by alice", p)
	}
	within(t, "PausedAt", *p.PausedAt, before, time.Now())
	if g := mustGet(t, st, j.ID); !g.Paused || !g.PausedAt.Equal(*p.PausedAt) || g.PausedBy != "alice" {
		t.Fatalf("stored job = paused %v at %v by %q; want what ChangePause returned", g.Paused, g.PausedAt, g.PausedBy)
	}
	// Pausing again is no error and changes nothing, not even who paused.
	again := mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpPause, By: "bob"})
	if !again.Paused || !again.PausedAt.Equal(*p.PausedAt) || again.PausedBy != "alice" {
		t.Fatalf("second pause = %+v; want the first pause unchanged", again)
	}
	r := mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpResume, By: "bob"})
	if r.Paused || r.PausedAt != nil || r.PausedBy != "" || r.PausedTotal < 0 || r.Pauses != 1 {
		t.Fatalf("resumed job = %+v", r)
	}
	mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpResume, By: "bob"})
	evs := pauseEvents(t, st, j.ID)
	if len(evs) != 2 || evs[0].Reason != drydock.PauseUser || evs[0].By != "alice" ||
		evs[1].Reason != drydock.PauseUser || evs[1].By != "bob" || evs[1].From == nil || !evs[1].From.Equal(*p.PausedAt) || evs[1].StillPaused {
		t.Fatalf("events = %+v; want one paused by alice and one resumed by bob with the pause's bounds", evs)
	}
	if got := mustGet(t, st, j.ID).PausedTotal; got != r.PausedTotal || got.Milliseconds() != time.Duration(evs[1].Seconds*float64(time.Second)).Milliseconds() {
		t.Fatalf("stored paused total %s; resume said %s and the event %.6fs", got, r.PausedTotal, evs[1].Seconds)
	}
}

func (s *suite) testPausePending(t *testing.T) {
	st := s.newStore(t)
	j := mustCreate(t, st, newJob(t, "u"))
	mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpPause, By: "alice"})
	// A paused pending job is still claimed (its sandbox can start); the
	// worker's agent then waits.
	c := mustClaim(t, st, "w", time.Hour)
	if c.ID != j.ID || !c.Paused || c.PausedBy != "alice" {
		t.Fatalf("claimed job = %+v; want it paused by alice", c)
	}
}

func (s *suite) testPauseFinished(t *testing.T) {
	st := s.newStore(t)
	mustCreate(t, st, newJob(t, "u"))
	j := mustClaim(t, st, "w", time.Hour)
	if err := st.FinishJob(t.Context(), j.ID, "w", drydock.JobResult{Status: drydock.StatusComplete}); err != nil {
		t.Fatal(err)
	}
	n := len(mustEvents(t, st, j.ID))
	for _, op := range []drydock.PauseOp{drydock.OpPause, drydock.OpResume, drydock.OpTakeControl} {
		_, err := st.ChangePause(t.Context(), j.ID, drydock.PauseChange{Op: op, By: "alice", Holder: "h", TTL: time.Minute})
		wantCode(t, "pause change of a finished job", err, drydock.ECONFLICT)
		if !strings.Contains(drydock.ErrorMessage(err), "complete") {
			t.Errorf("message %q does not say the job is complete", drydock.ErrorMessage(err))
		}
	}
	// What a closing desktop connection sends after the end is no error.
	if _, err := st.ChangePause(t.Context(), j.ID, drydock.PauseChange{Op: drydock.OpReleaseControl, Holder: "h"}); err != nil {
		t.Fatalf("release of a finished job's control: %v", err)
	}
	if got := len(mustEvents(t, st, j.ID)); got != n {
		t.Fatalf("refused changes appended %d events", got-n)
	}
}

func (s *suite) testPauseMissing(t *testing.T) {
	st := s.newStore(t)
	_, err := st.ChangePause(t.Context(), newID(t), drydock.PauseChange{Op: drydock.OpPause, By: "alice"})
	wantCode(t, "pause of a missing job", err, drydock.ENOTFOUND)
}

func (s *suite) testControlExclusive(t *testing.T) {
	st := s.newStore(t)
	mustCreate(t, st, newJob(t, "u"))
	j := mustClaim(t, st, "w", time.Hour)
	take := func(holder, by string) (*drydock.Job, error) {
		return st.ChangePause(t.Context(), j.ID, drydock.PauseChange{Op: drydock.OpTakeControl, Holder: holder, By: by, TTL: time.Hour})
	}
	a, err := take("conn-a", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if !a.Paused || a.ControlBy != "alice" || a.ControlLease != "conn-a" || a.ControlExpiresAt == nil || a.PausedBy != "" {
		t.Fatalf("job after alice took control = %+v", a)
	}
	_, err = take("conn-b", "bob")
	wantCode(t, "second holder", err, drydock.ECONFLICT)
	if !strings.Contains(drydock.ErrorMessage(err), "alice") {
		t.Errorf("refusal %q does not name the holder", drydock.ErrorMessage(err))
	}
	_, err = st.ChangePause(t.Context(), j.ID, drydock.PauseChange{Op: drydock.OpRenewControl, Holder: "conn-b", TTL: time.Hour})
	wantCode(t, "renewal by a non-holder", err, drydock.ECONFLICT)
	// The holder renews; bob's release of what he does not hold does nothing.
	r := mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpRenewControl, Holder: "conn-a", TTL: 2 * time.Hour})
	if !r.ControlExpiresAt.After(*a.ControlExpiresAt) {
		t.Fatalf("renewal kept the expiry at %v", r.ControlExpiresAt)
	}
	if g := mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpReleaseControl, Holder: "conn-b"}); g.ControlBy != "alice" {
		t.Fatalf("a non-holder's release freed the lease: %+v", g)
	}
	g := mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpReleaseControl, Holder: "conn-a"})
	if g.Paused || g.ControlBy != "" || g.ControlLease != "" || g.ControlExpiresAt != nil {
		t.Fatalf("job after release = %+v", g)
	}
	if _, err := take("conn-b", "bob"); err != nil {
		t.Fatalf("bob could not take released control: %v", err)
	}
	evs := pauseEvents(t, st, j.ID)
	if len(evs) != 3 || evs[0].Reason != drydock.PauseControl || evs[1].By != "alice" || evs[1].From == nil || evs[2].By != "bob" {
		t.Fatalf("events = %+v; want alice's take and release, bob's take", evs)
	}
}

func (s *suite) testControlDuringPause(t *testing.T) {
	st := s.newStore(t)
	mustCreate(t, st, newJob(t, "u"))
	j := mustClaim(t, st, "w", time.Hour)
	p := mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpPause, By: "alice"})
	mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpTakeControl, Holder: "c", By: "bob", TTL: time.Hour})
	g := mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpReleaseControl, Holder: "c"})
	if !g.Paused || g.PausedBy != "alice" || !g.PausedAt.Equal(*p.PausedAt) {
		t.Fatalf("releasing control lifted alice's pause: %+v", g)
	}
	g = mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpResume, By: "alice"})
	if g.Paused {
		t.Fatalf("resume left the job paused: %+v", g)
	}
	evs := pauseEvents(t, st, j.ID)
	if len(evs) != 4 || !evs[2].StillPaused || evs[2].Reason != drydock.PauseControl || evs[3].StillPaused || evs[3].From == nil || !evs[3].From.Equal(*p.PausedAt) {
		t.Fatalf("events = %+v; want the release still paused and the resume ending one pause since alice's", evs)
	}
}

func (s *suite) testControlExpires(t *testing.T) {
	st := s.newStore(t)
	mustCreate(t, st, newJob(t, "u"))
	j := mustClaim(t, st, "w", time.Hour)
	a := mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpTakeControl, Holder: "a", By: "alice", TTL: time.Millisecond})
	eventually(t, "the lease to expire on the store's clock", func() bool {
		// Expiring an unexpired lease does nothing, so this polls.
		g := mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpExpireControl})
		return !g.Paused
	})
	evs := pauseEvents(t, st, j.ID)
	if len(evs) != 2 || !evs[1].Expired || evs[1].To == nil || !evs[1].To.Equal(*a.ControlExpiresAt) {
		t.Fatalf("events = %+v; want the lease to end expired, at its expiry %v", evs, a.ControlExpiresAt)
	}
	// An expired lease nobody cleared does not keep another person out.
	mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpTakeControl, Holder: "b", By: "bob", TTL: time.Millisecond})
	eventually(t, "bob's lease to expire", func() bool {
		_, err := st.ChangePause(t.Context(), j.ID, drydock.PauseChange{Op: drydock.OpTakeControl, Holder: "c", By: "carol", TTL: time.Hour})
		return err == nil
	})
	if g := mustGet(t, st, j.ID); g.ControlBy != "carol" || !g.Paused {
		t.Fatalf("job = %+v; want carol in control", g)
	}
}

func (s *suite) testEndPause(t *testing.T) {
	st := s.newStore(t)
	mustCreate(t, st, newJob(t, "u"))
	j := mustClaim(t, st, "w", time.Hour)
	mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpPause, By: "alice"})
	mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpTakeControl, Holder: "c", By: "bob", TTL: time.Hour})
	g := mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpEndPause, By: "the server"})
	if g.Paused || g.PausedBy != "" || g.ControlLease != "" {
		t.Fatalf("job after pause-max = %+v", g)
	}
	_, err := st.ChangePause(t.Context(), j.ID, drydock.PauseChange{Op: drydock.OpRenewControl, Holder: "c", TTL: time.Hour})
	wantCode(t, "renewal after pause-max", err, drydock.ECONFLICT)
	evs := pauseEvents(t, st, j.ID)
	if last := evs[len(evs)-1]; last.Reason != drydock.PauseMax || last.From == nil {
		t.Fatalf("last event = %+v; want a pause-max resume", last)
	}
}

func (s *suite) testFinishEndsPause(t *testing.T) {
	st := s.newStore(t)
	mustCreate(t, st, newJob(t, "u"))
	j := mustClaim(t, st, "w", time.Hour)
	mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpPause, By: "alice"})
	if err := st.FinishJob(t.Context(), j.ID, "w", drydock.JobResult{Status: drydock.StatusCancelled}); err != nil {
		t.Fatal(err)
	}
	g := mustGet(t, st, j.ID)
	if g.Paused || g.PausedAt != nil || g.PausedBy != "" {
		t.Fatalf("finished job = paused %v at %v by %q; the end lifts the pause", g.Paused, g.PausedAt, g.PausedBy)
	}
}

func (s *suite) testRenewSeesPause(t *testing.T) {
	st := s.newStore(t)
	mustCreate(t, st, newJob(t, "u"))
	j := mustClaim(t, st, "w", time.Hour)
	mustPause(t, st, j.ID, drydock.PauseChange{Op: drydock.OpPause, By: "alice"})
	r, err := st.RenewLease(t.Context(), j.ID, "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Paused || r.PausedBy != "alice" {
		t.Fatalf("RenewLease = %+v; the worker must see the pause", r)
	}
}
