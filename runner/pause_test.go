package runner_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runner"
)

// waitingStore says when a read finds the job paused: the runner's agent
// is then waiting.
type waitingStore struct {
	drydock.Store
	once    sync.Once
	waiting chan struct{}
}

func (s *waitingStore) GetJob(ctx context.Context, id string) (*drydock.Job, error) {
	j, err := s.Store.GetJob(ctx, id)
	if err == nil && j.Paused && j.Status == drydock.StatusRunning {
		s.once.Do(func() { close(s.waiting) })
	}
	return j, err
}

func (s *waitingStore) wait(t *testing.T) {
	t.Helper()
	select {
	case <-s.waiting:
	case <-time.After(20 * time.Second):
		t.Fatal("the agent never waited on the paused job")
	}
}

func seqOf(es []*drydock.Event, typ drydock.EventType) int64 {
	for _, e := range es {
		if e.Type == typ {
			return e.Seq
		}
	}
	return 0
}

// A job paused before it was claimed gets its sandbox, but its agent runs
// no tool until the job is resumed.
func TestPausedJobRunsNoToolUntilResumed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ws := &waitingStore{Store: b.store, waiting: make(chan struct{})}
	b.deps.Store = ws
	id := b.create(t, "x [fake:steps=2]")
	if _, err := b.store.ChangePause(t.Context(), id, drydock.PauseChange{Op: drydock.OpPause, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond, PausePoll: time.Millisecond})
	ws.wait(t)
	if _, err := b.store.ChangePause(t.Context(), id, drydock.PauseChange{Op: drydock.OpResume, By: "bob"}); err != nil {
		t.Fatal(err)
	}
	if j := waitTerminal(t, b.store, id); j.Status != drydock.StatusComplete || j.Paused {
		t.Fatalf("job: %s paused=%v %q", j.Status, j.Paused, j.Error)
	}
	es, _ := b.store.ListEvents(t.Context(), id, 0, 1000)
	resumed, call := seqOf(es, drydock.EventResumed), seqOf(es, drydock.EventToolCall)
	if resumed == 0 || call == 0 || call < resumed {
		t.Fatalf("first tool call at seq %d, resume at seq %d: a tool ran while the job was paused", call, resumed)
	}
}

// Cancel ends a paused job at once, and nothing ran.
func TestCancelOfAPausedJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ws := &waitingStore{Store: b.store, waiting: make(chan struct{})}
	b.deps.Store = ws
	id := b.create(t, "x [fake:steps=2]")
	if _, err := b.store.ChangePause(t.Context(), id, drydock.PauseChange{Op: drydock.OpPause, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	r := b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond, PausePoll: time.Millisecond})
	ws.wait(t)
	if _, err := b.store.CancelJob(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	r.Cancel(id)
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusCancelled || j.Paused {
		t.Fatalf("job: %s paused=%v %q", j.Status, j.Paused, j.Error)
	}
	es, _ := b.store.ListEvents(t.Context(), id, 0, 1000)
	if seqOf(es, drydock.EventToolCall) != 0 {
		t.Fatal("a tool ran in a job that was paused until it was cancelled")
	}
}
