package runner

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlite"
)

// sawPaused wraps a store and says when a read found the job paused: the
// holder is then waiting.
type sawPaused struct {
	drydock.Store
	once   sync.Once
	paused chan struct{}
}

func (s *sawPaused) GetJob(ctx context.Context, id string) (*drydock.Job, error) {
	j, err := s.Store.GetJob(ctx, id)
	if err == nil && j.Paused {
		s.once.Do(func() { close(s.paused) })
	}
	return j, err
}

type holdBundle struct {
	st  *sawPaused
	job *drydock.Job
	h   *holder
}

func setupHold(t *testing.T, cfg Config) *holdBundle {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := &sawPaused{Store: db, paused: make(chan struct{})}
	j := &drydock.Job{ID: "0190a6c5-0000-7000-8000-000000000001", JobSpec: drydock.JobSpec{Task: "x"}}
	if err := st.CreateJob(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.ClaimJob(t.Context(), "w", time.Hour)
	if err != nil || claimed == nil {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	cfg.PausePoll = time.Millisecond
	r := New(cfg, Deps{Store: st})
	history, _ := st.ListEvents(t.Context(), j.ID, 0, 100)
	return &holdBundle{st: st, job: claimed, h: r.newHolder(claimed, history, slog.New(slog.DiscardHandler))}
}

func (b *holdBundle) change(t *testing.T, c drydock.PauseChange) {
	t.Helper()
	if _, err := b.st.ChangePause(t.Context(), b.job.ID, c); err != nil {
		t.Fatal(err)
	}
}

// hold runs Hold in the background.
func (b *holdBundle) hold(ctx context.Context) chan holdResult {
	ch := make(chan holdResult, 1)
	go func() {
		p, err := b.h.Hold(ctx)
		ch <- holdResult{p, err}
	}()
	return ch
}

type holdResult struct {
	p   *drydock.PauseSummary
	err error
}

func TestHoldPassesAnUnpausedJob(t *testing.T) {
	t.Parallel()
	b := setupHold(t, Config{})
	p, err := b.h.Hold(t.Context())
	if err != nil || p != nil {
		t.Fatalf("Hold = %+v, %v; want nil, nil", p, err)
	}
}

func TestHoldWaitsForResumeOnAnyReplica(t *testing.T) {
	t.Parallel()
	b := setupHold(t, Config{})
	b.change(t, drydock.PauseChange{Op: drydock.OpPause, By: "alice"})
	res := b.hold(t.Context())
	<-b.st.paused
	select {
	case r := <-res:
		t.Fatalf("Hold returned while paused: %+v", r)
	default:
	}
	// The resume is a store write, as another replica's API makes it.
	b.change(t, drydock.PauseChange{Op: drydock.OpResume, By: "bob"})
	r := <-res
	if r.err != nil || r.p == nil {
		t.Fatalf("Hold = %+v, %v", r.p, r.err)
	}
	if !slices.Equal(r.p.By, []string{"alice"}) || r.p.Desktop || r.p.To.Before(r.p.From) {
		t.Fatalf("summary = %+v; want alice's pause", r.p)
	}
	// Told once: the next call passes with nothing to tell.
	if p, err := b.h.Hold(t.Context()); p != nil || err != nil {
		t.Fatalf("second Hold = %+v, %v", p, err)
	}
}

// A pause that began and ended between two calls is still told.
func TestHoldTellsOfAPauseBetweenCalls(t *testing.T) {
	t.Parallel()
	b := setupHold(t, Config{})
	b.change(t, drydock.PauseChange{Op: drydock.OpTakeControl, Holder: "c", By: "carol", TTL: time.Hour})
	b.change(t, drydock.PauseChange{Op: drydock.OpReleaseControl, Holder: "c"})
	p, err := b.h.Hold(t.Context())
	if err != nil || p == nil || !p.Desktop || !slices.Equal(p.By, []string{"carol"}) {
		t.Fatalf("Hold = %+v, %v; want carol's use of the desktop", p, err)
	}
}

func TestHoldEndsAtCancel(t *testing.T) {
	t.Parallel()
	b := setupHold(t, Config{})
	b.change(t, drydock.PauseChange{Op: drydock.OpPause, By: "alice"})
	ctx, cancel := context.WithCancel(t.Context())
	res := b.hold(ctx)
	<-b.st.paused
	cancel()
	if r := <-res; r.err == nil {
		t.Fatalf("Hold = %+v after cancel; want the context's error", r.p)
	}
}

func TestPauseMaxResumesTheJob(t *testing.T) {
	t.Parallel()
	b := setupHold(t, Config{PauseMax: time.Nanosecond})
	b.change(t, drydock.PauseChange{Op: drydock.OpPause, By: "alice"})
	b.change(t, drydock.PauseChange{Op: drydock.OpTakeControl, Holder: "c", By: "carol", TTL: time.Hour})
	r := <-b.hold(t.Context())
	if r.err != nil || r.p == nil || !slices.Contains(r.p.Reasons, drydock.PauseMax) {
		t.Fatalf("Hold = %+v, %v; want a pause ended by pause-max", r.p, r.err)
	}
	j, _ := b.st.GetJob(t.Context(), b.job.ID)
	if j.Paused || j.ControlLease != "" {
		t.Fatalf("job after pause-max = %+v", j)
	}
}

func TestHoldEndsAnAbandonedControlLease(t *testing.T) {
	t.Parallel()
	b := setupHold(t, Config{})
	b.change(t, drydock.PauseChange{Op: drydock.OpTakeControl, Holder: "c", By: "carol", TTL: time.Millisecond})
	r := <-b.hold(t.Context())
	if r.err != nil || r.p == nil || !r.p.Desktop {
		t.Fatalf("Hold = %+v, %v; want the expired control told", r.p, r.err)
	}
}
