package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/pool"
	"github.com/drydockhq/drydock/runner"
	"github.com/drydockhq/drydock/toolbox"
)

func newPool(t *testing.T, b *bundle, size int) *pool.Pool {
	t.Helper()
	p, err := pool.New(pool.Config{NodeID: "n", Size: map[drydock.Profile]int{drydock.ProfileHeadless: size}}, pool.Deps{
		Runtime: b.runtime,
		Ready: func(ctx context.Context, sb *drydock.Sandbox) error {
			c := toolbox.New(sb.Endpoint, sb.Token)
			defer c.Close()
			return c.WaitReady(ctx)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func warmIDs(t *testing.T, b *bundle, p *pool.Pool) []string {
	t.Helper()
	list, err := b.runtime.List(t.Context(), map[string]string{pool.LabelPool: p.Owner()})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, sb := range list {
		if _, ok := pool.Unclaimed(sb); ok {
			ids = append(ids, sb.ID)
		}
	}
	return ids
}

func TestJobsRunOnWarmSandboxes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := newPool(t, b, 1)
	b.deps.Pool = p
	reg := prometheus.NewRegistry()
	b.deps.Metrics = runner.NewMetrics(reg)
	b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
	deadline := time.Now().Add(20 * time.Second)
	for p.Idle(drydock.ProfileHeadless) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the pool did not fill")
		}
		time.Sleep(10 * time.Millisecond)
	}
	warm := warmIDs(t, b, p)

	id := b.create(t, "x [fake:steps=2]")
	j := waitTerminal(t, b.store, id)
	if j.Status != drydock.StatusComplete || j.ArtifactKey == "" {
		t.Fatalf("job on a warm sandbox: %s %q", j.Status, j.Error)
	}
	if len(warm) != 1 || j.SandboxID != warm[0] {
		t.Errorf("job ran in sandbox %s, want the warm one %v", j.SandboxID, warm)
	}
	if got := sample(t, reg, "drydock_sandbox_starts_total", "headless", "warm"); got != 1 {
		t.Errorf("warm starts = %v, want 1", got)
	}
	if got := sample(t, reg, "drydock_sandbox_starts_total", "headless", "cold"); got != 0 {
		t.Errorf("cold starts = %v, want 0", got)
	}

	// A job the pool cannot serve (there is no desktop pool) starts cold.
	id = newID(t)
	if err := b.store.CreateJob(t.Context(), &drydock.Job{ID: id, Status: drydock.StatusPending, CreatedAt: time.Now(), OwnerID: "local", JobSpec: drydock.JobSpec{Task: "x [fake:steps=1]", Profile: drydock.ProfileDesktop}}); err != nil {
		t.Fatal(err)
	}
	if j := waitTerminal(t, b.store, id); j.Status != drydock.StatusComplete {
		t.Fatalf("cold job: %s %q", j.Status, j.Error)
	}
	if got := sample(t, reg, "drydock_sandbox_starts_total", "desktop", "cold"); got != 1 {
		t.Errorf("cold desktop starts = %v, want 1", got)
	}
	for _, l := range [][2]string{{"headless", "warm"}, {"desktop", "cold"}} {
		if n := sample(t, reg, "drydock_sandbox_acquire_seconds", l[0], l[1]); n != 1 {
			t.Errorf("acquire time of %s %s: %v samples, want 1", l[0], l[1], n)
		}
	}
}

// The reaper leaves this process's warm sandboxes to its pool, removes the
// ones a previous process left, and treats claimed ones like any other
// job's.
func TestReaperAndWarmSandboxes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := newPool(t, b, 1)
	b.deps.Pool = p
	mk := func(owner string) *drydock.Sandbox {
		// What a pool with this owner starts.
		sb, err := b.runtime.Create(t.Context(), drydock.SandboxSpec{JobID: "pool:" + owner, Profile: drydock.ProfileHeadless,
			Labels: map[string]string{pool.LabelPool: owner}})
		if err != nil {
			t.Fatal(err)
		}
		return sb
	}
	ours := mk(p.Owner())
	stale := mk("n:previous")
	running := b.create(t, "x")
	if _, err := b.store.ClaimJob(t.Context(), "other:1", time.Hour); err != nil {
		t.Fatal(err)
	}
	claimedRunning, err := b.runtime.Claim(t.Context(), mk("n:previous").ID, running)
	if err != nil {
		t.Fatal(err)
	}
	done := b.create(t, "y")
	if _, err := b.store.CancelJob(t.Context(), done); err != nil {
		t.Fatal(err)
	}
	claimedDone, err := b.runtime.Claim(t.Context(), mk(p.Owner()).ID, done)
	if err != nil {
		t.Fatal(err)
	}

	r := runner.New(runner.Config{NodeID: "n"}, b.deps)
	n, err := r.Reap(t.Context())
	if err != nil || n != 2 {
		t.Fatalf("Reap = %d, %v; want 2", n, err)
	}
	for sb, want := range map[*drydock.Sandbox]bool{ours: true, stale: false, claimedRunning: true, claimedDone: false} {
		_, err := b.runtime.Get(t.Context(), sb.ID)
		if exists := err == nil; exists != want {
			t.Errorf("sandbox %s (job %s) exists=%v, want %v (%v)", sb.ID, sb.Labels[drydock.LabelJob], exists, want, err)
		}
	}
}

// sample is the value of a counter, or the sample count of a histogram,
// with the given profile and start labels; 0 when absent.
func sample(t *testing.T, reg *prometheus.Registry, name, profile, start string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["profile"] != profile || labels["start"] != start {
				continue
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
