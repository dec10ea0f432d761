package runner_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runner"
)

// listRecorder records the seqs the runner reads the log after.
type listRecorder struct {
	drydock.Store
	mu     sync.Mutex
	afters []int64
}

func (l *listRecorder) ListEvents(ctx context.Context, id string, after int64, limit int) ([]*drydock.Event, error) {
	l.mu.Lock()
	l.afters = append(l.afters, after)
	l.mu.Unlock()
	return l.Store.ListEvents(ctx, id, after, limit)
}

// inboxAgent plays the agent's side of messages and reports what it saw.
type inboxAgent struct {
	store drydock.Store
	check func(ctx context.Context, run *drydock.AgentRun) error
	err   chan error
}

func (a *inboxAgent) Run(ctx context.Context, run *drydock.AgentRun) (*drydock.AgentOutcome, error) {
	a.err <- a.check(ctx, run)
	return &drydock.AgentOutcome{Summary: "done"}, nil
}

func message(t *testing.T, st drydock.Store, id, text string) int64 {
	t.Helper()
	data, _ := json.Marshal(drydock.UserMessage{Text: text})
	e := &drydock.Event{JobID: id, Type: drydock.EventUserMessage, Data: data}
	if err := st.AppendMessage(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	return e.Seq
}

// The runner's Inbox returns only user_message events after the seq asked
// for, and reads each event of the log once, however often it is asked;
// its Ask shows the question as the job's waiting_for.
func TestInboxReadsOnlyNewEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := &listRecorder{Store: b.store}
	b.deps.Store = rec
	id := b.create(t, "steer me")
	early := message(t, b.store, id, "sent while pending")
	ag := &inboxAgent{store: b.store, err: make(chan error, 1)}
	ag.check = func(ctx context.Context, run *drydock.AgentRun) error {
		if run.Inbox == nil || run.Ask == nil {
			t.Error("the runner gave the agent no Inbox or Ask")
			return nil
		}
		for range 3 {
			if err := run.Events.Emit(ctx, drydock.EventLog, map[string]string{"message": "work"}); err != nil {
				return err
			}
		}
		got, err := run.Inbox(ctx, 0)
		if err != nil || len(got) != 1 || got[0].Seq != early {
			t.Errorf("Inbox(0) = %v, %v; want the early message", got, err)
		}
		later := message(t, b.store, id, "sent while running")
		got, err = run.Inbox(ctx, early)
		if err != nil || len(got) != 1 || got[0].Seq != later {
			t.Errorf("Inbox(%d) = %v, %v; want only the later message", early, got, err)
		}
		got, err = run.Inbox(ctx, later)
		if err != nil || len(got) != 0 {
			t.Errorf("Inbox(%d) = %v, %v; want nothing new", later, got, err)
		}
		rec.mu.Lock()
		reads := append([]int64(nil), rec.afters[len(rec.afters)-3:]...)
		rec.mu.Unlock()
		// The agent asked after the early message; the log's next three
		// events had been read already.
		if reads[1] < early+3 || reads[2] < later {
			t.Errorf("Inbox read the log again: after seqs %v (early message %d, later %d)", reads, early, later)
		}
		if err := run.Ask(ctx, "Which port?"); err != nil {
			return err
		}
		if j, _ := b.store.GetJob(ctx, id); j.WaitingFor != "Which port?" {
			t.Errorf("waiting_for %q after Ask", j.WaitingFor)
		}
		return run.Ask(ctx, "")
	}
	b.deps.Agent = ag
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	select {
	case err := <-ag.err:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the agent never ran")
	}
	if j := waitTerminal(t, b.store, id); j.WaitingFor != "" {
		t.Errorf("finished job still waits for %q", j.WaitingFor)
	}
}

// A message the agent never received (it came during the last step) is
// noted as undelivered when the job ends; a delivered one is not.
func TestUndeliveredMessagesAreNotedAtTheEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.create(t, "finish at once")
	var delivered, late int64
	ag := &inboxAgent{store: b.store, err: make(chan error, 1)}
	ag.check = func(ctx context.Context, run *drydock.AgentRun) error {
		delivered = message(t, b.store, id, "read this")
		if err := run.Events.Emit(ctx, drydock.EventLog, map[string]any{"kind": drydock.LogMessageDelivered, "seq": delivered, "notice": true, "message": "read this"}); err != nil {
			return err
		}
		late = message(t, b.store, id, "too late")
		return nil
	}
	b.deps.Agent = ag
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	if err := <-ag.err; err != nil {
		t.Fatal(err)
	}
	waitTerminal(t, b.store, id)
	events, err := b.store.ListEvents(t.Context(), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var noted []int64
	for _, e := range events {
		var n struct {
			Kind string `json:"kind"`
			Seq  int64  `json:"seq"`
		}
		if e.Type == drydock.EventLog && json.Unmarshal(e.Data, &n) == nil && n.Kind == drydock.LogMessageUndelivered {
			noted = append(noted, n.Seq)
		}
	}
	if len(noted) != 1 || noted[0] != late {
		t.Errorf("noted undelivered %v; want only the late message %d (delivered: %d)", noted, late, delivered)
	}
}
