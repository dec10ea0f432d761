package runner_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runner"
)

// egressLog records what the runner asked of Deps.Egress.
type egressLog struct {
	mu     sync.Mutex
	opened []string // job id, its list and the sandbox, per call
	closed int
	err    error
}

func (l *egressLog) open(ctx context.Context, job *drydock.Job, sb *drydock.Sandbox) (io.Closer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return nil, l.err
	}
	l.opened = append(l.opened, job.ID+" "+strings.Join(job.Egress, ",")+" "+sb.ID)
	return closer(func() { l.mu.Lock(); l.closed++; l.mu.Unlock() }), nil
}

type closer func()

func (c closer) Close() error { c(); return nil }

func (b *bundle) createWithEgress(t *testing.T, task string, egress ...string) string {
	t.Helper()
	id := newID(t)
	if err := b.store.CreateJob(t.Context(), &drydock.Job{ID: id, Status: drydock.StatusPending, CreatedAt: time.Now(), OwnerID: "local",
		JobSpec: drydock.JobSpec{Task: task, Profile: drydock.ProfileHeadless, Egress: egress}}); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestEgressIsOpenedForTheJobAndClosedAfterIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	log := &egressLog{}
	b.deps.Egress = log.open
	id := b.createWithEgress(t, "x [fake:steps=1] [fake:delay=1ms]", "pypi.example.com:443", "*.npm.example.com")
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	if j := waitTerminal(t, b.store, id); j.Status != drydock.StatusComplete {
		t.Fatalf("job: %s %q", j.Status, j.Error)
	}
	j, _ := b.store.GetJob(t.Context(), id)
	deadline := time.Now().Add(5 * time.Second)
	for {
		log.mu.Lock()
		opened, closed := slices.Clone(log.opened), log.closed
		log.mu.Unlock()
		if closed == 1 {
			if want := []string{id + " pypi.example.com:443,*.npm.example.com " + j.SandboxID}; !slices.Equal(opened, want) {
				t.Errorf("opened %q, want %q", opened, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("egress opened %q and closed %d times", opened, closed)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestEgressThatCannotOpenFailsTheJobWithTheReason(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.deps.Egress = (&egressLog{err: drydock.Errorf(drydock.EUNAVAILABLE, "socket directory missing")}).open
	id := b.create(t, "x [fake:steps=1]")
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusError || !strings.Contains(j.Error, "socket directory missing") {
		t.Errorf("job: %s %q", j.Status, j.Error)
	}
	if j.ArtifactKey == "" {
		t.Error("the workspace was not archived")
	}
}

// A job recovered into its existing sandbox gets its egress back: the
// previous process's proxy listener died with it.
func TestEgressIsReopenedOnReattach(t *testing.T) {
	t.Parallel()
	b := setup(t)
	log := &egressLog{}
	b.deps.Egress = log.open
	id := b.createWithEgress(t, "x [fake:steps=1] [fake:delay=1ms]", "example.com")
	if _, err := b.store.ClaimJob(t.Context(), "n:dead", time.Hour); err != nil {
		t.Fatal(err)
	}
	sb, err := b.runtime.Create(t.Context(), drydock.SandboxSpec{JobID: id, Labels: map[string]string{drydock.LabelServer: "n"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.store.UpdateProgress(t.Context(), id, "n:dead", drydock.JobProgress{SandboxID: &sb.ID}); err != nil {
		t.Fatal(err)
	}
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	if j := waitTerminal(t, b.store, id); j.Status != drydock.StatusComplete {
		t.Fatalf("job: %s %q", j.Status, j.Error)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if want := []string{id + " example.com " + sb.ID}; !slices.Equal(log.opened, want) {
		t.Errorf("opened %q, want %q", log.opened, want)
	}
}
