package watch_test

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlite"
	"github.com/drydockhq/drydock/watch"
)

func TestChangedWakesAndForgetsIdleWaiters(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := watch.Wrap(st)
	id := "0193aaaa-0000-7000-8000-000000000001"
	if err := w.CreateJob(t.Context(), &drydock.Job{ID: id, CreatedAt: time.Now(), JobSpec: drydock.JobSpec{Task: "x"}}); err != nil {
		t.Fatal(err)
	}
	a, releaseA := w.Changed(id)
	_, releaseB := w.Changed(id)
	if err := w.AppendEvent(t.Context(), drydock.NewEvent(id, drydock.EventLog, "x")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a:
	case <-time.After(time.Second):
		t.Fatal("a write did not wake the waiter")
	}
	releaseA()
	releaseB()
	// Waiters that leave without a write (a stream on a finished job, a
	// viewer who closes the tab) must not stay behind.
	_, r1 := w.Changed(id)
	_, r2 := w.Changed(id)
	r1()
	r1() // twice is harmless
	if w.Watched() != 1 {
		t.Errorf("one waiter left, %d jobs watched", w.Watched())
	}
	r2()
	if w.Watched() != 0 {
		t.Errorf("all waiters left, %d jobs still watched", w.Watched())
	}
}
