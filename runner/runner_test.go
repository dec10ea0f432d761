package runner_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/fake"
	"github.com/drydockhq/drydock/artifact/local"
	"github.com/drydockhq/drydock/runner"
	localrt "github.com/drydockhq/drydock/runtime/local"
	"github.com/drydockhq/drydock/store/sqlite"
	"github.com/drydockhq/drydock/toolbox"
)

type conn struct{ *toolbox.Client }

func (c conn) WaitReady(ctx context.Context) error { return c.Client.WaitReady(ctx) }
func (c conn) DownloadTar(ctx context.Context, p string) (io.ReadCloser, error) {
	return c.Client.DownloadTar(ctx, p)
}

// countingAgent wraps the fake agent and records how many runs overlap.
type countingAgent struct {
	inner            drydock.Agent
	now, max, starts atomic.Int64
}

func (a *countingAgent) Run(ctx context.Context, run *drydock.AgentRun) (*drydock.AgentOutcome, error) {
	a.starts.Add(1)
	n := a.now.Add(1)
	defer a.now.Add(-1)
	for {
		m := a.max.Load()
		if n <= m || a.max.CompareAndSwap(m, n) {
			break
		}
	}
	return a.inner.Run(ctx, run)
}

// checkedStore fails the test when the runner (or the agent through it)
// appends an event whose data is not its kind's type.
type checkedStore struct {
	drydock.Store
	t *testing.T
}

func (s checkedStore) AppendEvent(ctx context.Context, e *drydock.Event) error {
	if err := drydock.CheckEventData(e.Type, e.Data); err != nil {
		s.t.Errorf("event %s of job %s: %v", e.Type, e.JobID, err)
	}
	return s.Store.AppendEvent(ctx, e)
}

type bundle struct {
	sandboxRoot string
	store       *sqlite.Store
	runtime     *localrt.Runtime
	agent       *countingAgent
	deps        runner.Deps
}

func setup(t *testing.T) *bundle {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rt, err := localrt.New(localrt.Options{Root: filepath.Join(dir, "sandboxes"), ServerID: "n"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	arts, err := local.New(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	dial := func(sb *drydock.Sandbox) conn { return conn{toolbox.New(sb.Endpoint, sb.Token)} }
	ag := &countingAgent{inner: &fake.Agent{Dial: func(sb *drydock.Sandbox) fake.Workspace { return dial(sb) }}}
	return &bundle{sandboxRoot: filepath.Join(dir, "sandboxes"), store: st, runtime: rt, agent: ag, deps: runner.Deps{
		Store: checkedStore{st, t}, Runtime: rt, Agent: ag, Artifacts: arts,
		Toolbox: func(sb *drydock.Sandbox) runner.Toolbox { return dial(sb) },
	}}
}

func (b *bundle) start(t *testing.T, cfg runner.Config) *runner.Runner {
	t.Helper()
	r := runner.New(cfg, b.deps)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

func (b *bundle) create(t *testing.T, task string) string {
	t.Helper()
	id := newID(t)
	if err := b.store.CreateJob(t.Context(), &drydock.Job{ID: id, Status: drydock.StatusPending, CreatedAt: time.Now(), OwnerID: "local", JobSpec: drydock.JobSpec{Task: task, Profile: drydock.ProfileHeadless}}); err != nil {
		t.Fatal(err)
	}
	return id
}

var idN atomic.Int64

func newID(t *testing.T) string {
	return fmt.Sprintf("0193aaaa-0000-7000-8000-%012x", idN.Add(1))
}

func waitTerminal(t *testing.T, st drydock.Store, id string) *drydock.Job {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		j, err := st.GetJob(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.Terminal() {
			return j
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("job %s not terminal in time", id)
	return nil
}

func TestRespectsConcurrencyLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []string
	for range 6 {
		ids = append(ids, b.create(t, "x [fake:steps=2] [fake:delay=50ms]"))
	}
	b.start(t, runner.Config{NodeID: "n", MaxConcurrent: 2, PollInterval: 20 * time.Millisecond})
	for _, id := range ids {
		if j := waitTerminal(t, b.store, id); j.Status != drydock.StatusComplete || j.ArtifactKey == "" {
			t.Errorf("job %s: %s %q artifact=%q", id, j.Status, j.Error, j.ArtifactKey)
		}
	}
	if m := b.agent.max.Load(); m != 2 {
		t.Errorf("at most %d jobs ran at once, want exactly 2", m)
	}
	// Every sandbox is destroyed right after its job is finished.
	deadline := time.Now().Add(10 * time.Second)
	for {
		sbs, err := b.runtime.List(t.Context(), map[string]string{drydock.LabelManaged: "true"})
		if err == nil && len(sbs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandboxes left: %v %v", sbs, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A cancel flagged in the store (as another replica's API would) reaches the
// worker through its heartbeat.
func TestCancelReachesWorkerThroughHeartbeat(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.create(t, "x [fake:steps=0] [fake:hang]")
	b.start(t, runner.Config{NodeID: "n", LeaseTTL: 300 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	deadline := time.Now().Add(10 * time.Second)
	for b.agent.starts.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := b.store.CancelJob(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusCancelled || j.ArtifactKey == "" {
		t.Errorf("job: %s %q artifact=%q", j.Status, j.Error, j.ArtifactKey)
	}
}

// A job recovered from a dead process whose sandbox is gone fails with the
// reason instead of hanging or silently restarting.
func TestRecoveryWithLostSandboxFailsWithReason(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.create(t, "x")
	job, err := b.store.ClaimJob(t.Context(), "n:dead", time.Hour)
	if err != nil || job == nil {
		t.Fatal(job, err)
	}
	gone := "sandbox-that-is-gone"
	if err := b.store.UpdateProgress(t.Context(), id, "n:dead", drydock.JobProgress{SandboxID: &gone}); err != nil {
		t.Fatal(err)
	}
	// Same node id: the new incarnation takes over at once, not after an hour.
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusError || !strings.Contains(j.Error, "is gone") {
		t.Errorf("job: %s %q", j.Status, j.Error)
	}
	if j.Attempts != 2 {
		t.Errorf("attempts = %d", j.Attempts)
	}
}

// A job whose worker died (lease expired, other node) is taken over by a
// live runner and continues in its sandbox.
func TestExpiredLeaseIsTakenOver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.create(t, "x [fake:steps=2] [fake:delay=10ms]")
	if _, err := b.store.ClaimJob(t.Context(), "other:1", 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusComplete || j.Steps != 2 {
		t.Errorf("job: %s steps=%d %q", j.Status, j.Steps, j.Error)
	}
}

// The reaper removes sandboxes of finished and unknown jobs, and keeps those
// of running jobs and of other servers, unless that server is gone: its
// sandbox of a job that ended past the grace goes too.
func TestReaperRemovesOnlyFinishedOrUnknown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other, err := localrt.New(localrt.Options{Root: b.sandboxRoot, ServerID: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	mk := func(jobID, server string) *drydock.Sandbox {
		rt := b.runtime
		if server != "n" {
			rt = other
		}
		sb, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: jobID, Profile: drydock.ProfileHeadless, Labels: map[string]string{
			drydock.LabelManaged: "true", drydock.LabelJob: jobID, drydock.LabelServer: server,
		}})
		if err != nil {
			t.Fatal(err)
		}
		return sb
	}
	running := b.create(t, "x")
	if _, err := b.store.ClaimJob(t.Context(), "other:1", time.Hour); err != nil {
		t.Fatal(err)
	}
	done := b.create(t, "y")
	if _, err := b.store.CancelJob(t.Context(), done); err != nil {
		t.Fatal(err)
	}
	keepRunning := mk(running, "n")
	reapDone := mk(done, "n")
	reapUnknown := mk("0193ffff-0000-7000-8000-000000000000", "n")
	otherServer := mk("0193ffff-0000-7000-8000-000000000001", "someone-else")
	// Another node's sandboxes of this store's jobs: that node is gone
	// once the job ended a while ago (a replaced replica).
	doneElsewhere := mk(done, "someone-else")
	runningElsewhere := mk(running, "someone-else")

	check := func(want map[*drydock.Sandbox]bool) {
		t.Helper()
		for sb, want := range want {
			_, err := b.runtime.Get(t.Context(), sb.ID)
			if exists := err == nil; exists != want {
				t.Errorf("sandbox of job %s on %s exists=%v, want %v (%v)", sb.Labels[drydock.LabelJob], sb.Labels[drydock.LabelServer], exists, want, err)
			}
		}
	}
	r := runner.New(runner.Config{NodeID: "n", OrphanGrace: time.Hour}, b.deps)
	n, err := r.Reap(t.Context())
	if err != nil || n != 2 {
		t.Fatalf("Reap = %d, %v; want 2", n, err)
	}
	check(map[*drydock.Sandbox]bool{keepRunning: true, reapDone: false, reapUnknown: false, otherServer: true, doneElsewhere: true, runningElsewhere: true})

	// Past the grace, the finished job's sandbox goes; the running job's
	// and the unknown job's stay.
	r = runner.New(runner.Config{NodeID: "n", OrphanGrace: time.Nanosecond}, b.deps)
	if n, err := r.Reap(t.Context()); err != nil || n != 1 {
		t.Fatalf("Reap past the grace = %d, %v; want 1", n, err)
	}
	check(map[*drydock.Sandbox]bool{keepRunning: true, otherServer: true, doneElsewhere: false, runningElsewhere: true})
}

// pruningRuntime counts the reaper's sweeps of host-side sandbox state.
type pruningRuntime struct {
	drydock.Runtime
	sweeps atomic.Int32
}

func (p *pruningRuntime) PruneStateDirs(context.Context) (int, error) {
	p.sweeps.Add(1)
	return 0, nil
}

// A runtime that keeps state beside its containers has it swept on every
// reaper round.
func TestReaperSweepsRuntimeState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rt := &pruningRuntime{Runtime: b.deps.Runtime}
	b.deps.Runtime = rt
	b.start(t, runner.Config{NodeID: "n", ReapInterval: 10 * time.Millisecond})
	for deadline := time.Now().Add(10 * time.Second); rt.sweeps.Load() < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d sweeps in 10 s at a 10 ms interval", rt.sweeps.Load())
		}
	}
}
