package pool_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/pool"
	localrt "github.com/drydockhq/drydock/runtime/local"
	"github.com/drydockhq/drydock/toolbox"
)

// resolver is a local runtime whose image "tag" can be moved by a test.
type resolver struct {
	*localrt.Runtime
	id atomic.Value // string
}

func (r *resolver) ImageID(context.Context, string) (string, error) { return r.id.Load().(string), nil }

func newRuntime(t *testing.T) *resolver {
	t.Helper()
	rt, err := localrt.New(localrt.Options{Root: t.TempDir(), ServerID: "node-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	r := &resolver{Runtime: rt}
	r.id.Store("sha256:one")
	return r
}

func ready(ctx context.Context, sb *drydock.Sandbox) error {
	c := toolbox.New(sb.Endpoint, sb.Token)
	defer c.Close()
	return c.WaitReady(ctx)
}

// start runs a pool over rt until the test ends and waits until it is full.
func start(t *testing.T, rt pool.Runtime, cfg pool.Config) *pool.Pool {
	t.Helper()
	if cfg.NodeID == "" {
		cfg.NodeID = "node-1"
	}
	p, err := pool.New(cfg, pool.Deps{Runtime: rt, Ready: ready})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	for prof, n := range cfg.Size {
		waitFor(t, "a full pool", func() bool { return p.Idle(prof) == n })
	}
	return p
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func spec(job string) drydock.SandboxSpec {
	return drydock.SandboxSpec{JobID: job, Profile: drydock.ProfileHeadless}
}

// warmIDs lists the pool's unclaimed sandboxes in the runtime.
func warmIDs(t *testing.T, rt drydock.Runtime, owner string) map[string]bool {
	t.Helper()
	list, err := rt.List(context.Background(), map[string]string{pool.LabelPool: owner})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, sb := range list {
		if o, ok := pool.Unclaimed(sb); ok && o == owner {
			ids[sb.ID] = true
		}
	}
	return ids
}

func TestEveryWarmSandboxGoesToOneJob(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t)
	p := start(t, rt, pool.Config{Size: map[drydock.Profile]int{drydock.ProfileHeadless: 3}, CheckInterval: time.Hour})
	poolTokens := map[string]string{}
	list, _ := rt.List(context.Background(), map[string]string{pool.LabelPool: p.Owner()})
	for _, sb := range list {
		poolTokens[sb.ID] = sb.Token
	}

	var mu sync.Mutex
	got := map[string]string{} // sandbox -> job
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Go(func() {
			job := "job-" + string(rune('A'+i))
			sb, err := p.Claim(context.Background(), spec(job))
			if err != nil {
				t.Errorf("claim for %s: %v", job, err)
				return
			}
			if sb == nil {
				return // pool empty: the caller would start one cold
			}
			mu.Lock()
			defer mu.Unlock()
			if other, dup := got[sb.ID]; dup {
				t.Errorf("sandbox %s handed to %s and %s", sb.ID, other, job)
			}
			got[sb.ID] = job
		})
	}
	wg.Wait()
	if len(got) != 3 {
		t.Fatalf("%d sandboxes handed out, want the 3 warm ones", len(got))
	}
	for id, job := range got {
		sb, err := rt.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if sb.Labels[drydock.LabelJob] != job {
			t.Errorf("%s: job label %q after the claim, want %q", id, sb.Labels[drydock.LabelJob], job)
		}
		if _, unclaimed := pool.Unclaimed(sb); unclaimed {
			t.Errorf("%s still reads as unclaimed", id)
		}
		if sb.Token == poolTokens[id] || sb.Token == "" {
			t.Errorf("%s: the job got the pool's token", id)
		}
		if _, err := toolbox.New(sb.Endpoint, poolTokens[id]).Info(context.Background()); drydock.ErrorCode(err) != drydock.EUNAUTHORIZED {
			t.Errorf("%s: the pool's token after the claim: %v, want unauthorized", id, err)
		}
		if _, err := toolbox.New(sb.Endpoint, sb.Token).Info(context.Background()); err != nil {
			t.Errorf("%s: the job's token: %v", id, err)
		}
	}
	// The pool refills in the background, with new sandboxes.
	waitFor(t, "the refill", func() bool { return p.Idle(drydock.ProfileHeadless) == 3 })
	for id := range warmIDs(t, rt, p.Owner()) {
		if got[id] != "" {
			t.Errorf("claimed sandbox %s is back in the pool", id)
		}
	}
}

func TestJobsThatAWarmSandboxCannotServeStartCold(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t)
	p := start(t, rt, pool.Config{
		Size:      map[drydock.Profile]int{drydock.ProfileHeadless: 1},
		Images:    map[drydock.Profile]string{drydock.ProfileHeadless: "img:a"},
		Resources: drydock.Resources{CPUs: 1},
	})
	fits := spec("job")
	fits.Image, fits.Resources = "img:a", drydock.Resources{CPUs: 1}
	for name, mod := range map[string]func(*drydock.SandboxSpec){
		"environment":     func(s *drydock.SandboxSpec) { s.Env = map[string]string{"A": "1"} },
		"other image":     func(s *drydock.SandboxSpec) { s.Image = "img:b" },
		"other resources": func(s *drydock.SandboxSpec) { s.Resources.MemoryBytes = 1 << 30 },
		"extra label":     func(s *drydock.SandboxSpec) { s.Labels = map[string]string{"team": "x"} },
		"desktop":         func(s *drydock.SandboxSpec) { s.Profile = drydock.ProfileDesktop },
	} {
		s := fits
		mod(&s)
		if sb, err := p.Claim(context.Background(), s); sb != nil || err != nil {
			t.Errorf("%s: claim gave %v, %v; want nothing", name, sb, err)
		}
	}
	if p.Idle(drydock.ProfileHeadless) != 1 {
		t.Fatal("a refused claim took a warm sandbox")
	}
	// An egress list is applied after the claim, by the proxy: it fits.
	fits.Egress = []string{"example.com:443"}
	if sb, err := p.Claim(context.Background(), fits); sb == nil || err != nil {
		t.Errorf("fitting spec: %v, %v", sb, err)
	}
}

func TestAnEmptyPoolNeverBlocks(t *testing.T) {
	t.Parallel()
	p, err := pool.New(pool.Config{Size: map[drydock.Profile]int{drydock.ProfileHeadless: 2}}, pool.Deps{Runtime: newRuntime(t), Ready: ready})
	if err != nil {
		t.Fatal(err)
	}
	// Not running: nothing is warm, and the claim answers at once.
	t0 := time.Now()
	if sb, err := p.Claim(context.Background(), spec("job")); sb != nil || err != nil {
		t.Errorf("claim on an empty pool: %v, %v", sb, err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("claim on an empty pool took %s", d)
	}
}

func TestAUsedWorkspaceIsNeverHandedOut(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t)
	p := start(t, rt, pool.Config{Size: map[drydock.Profile]int{drydock.ProfileHeadless: 1}, CheckInterval: time.Hour})
	var id string
	for w := range warmIDs(t, rt, p.Owner()) {
		id = w
	}
	if err := os.WriteFile(filepath.Join(rt.Workspace(id), "leftover"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := p.Claim(context.Background(), spec("job"))
	if err != nil || sb != nil {
		t.Fatalf("claim of the only, dirty, sandbox: %v, %v; want nothing (a cold start)", sb, err)
	}
	waitFor(t, "the dirty sandbox's destruction", func() bool {
		_, err := rt.Get(context.Background(), id)
		return drydock.ErrorCode(err) == drydock.ENOTFOUND
	})
}

func TestOldAndOutdatedSandboxesAreReplaced(t *testing.T) {
	t.Parallel()
	t.Run("max age", func(t *testing.T) {
		t.Parallel()
		rt := newRuntime(t)
		p := start(t, rt, pool.Config{Size: map[drydock.Profile]int{drydock.ProfileHeadless: 2}, MaxAge: 300 * time.Millisecond, CheckInterval: 50 * time.Millisecond})
		first := warmIDs(t, rt, p.Owner())
		waitFor(t, "new sandboxes", func() bool {
			now := warmIDs(t, rt, p.Owner())
			for id := range first {
				if now[id] {
					return false
				}
			}
			return len(now) > 0
		})
	})
	t.Run("image change", func(t *testing.T) {
		t.Parallel()
		rt := newRuntime(t)
		p := start(t, rt, pool.Config{Size: map[drydock.Profile]int{drydock.ProfileHeadless: 2}, CheckInterval: 50 * time.Millisecond})
		first := warmIDs(t, rt, p.Owner())
		time.Sleep(200 * time.Millisecond) // several checks: the same image keeps them
		if now := warmIDs(t, rt, p.Owner()); len(now) != 2 || !now[firstKey(first)] {
			t.Fatalf("warm sandboxes changed without an image change: %v -> %v", first, now)
		}
		rt.id.Store("sha256:two")
		waitFor(t, "replacement after the image change", func() bool {
			now := warmIDs(t, rt, p.Owner())
			for id := range first {
				if now[id] {
					return false
				}
			}
			return len(now) == 2
		})
	})
}

func firstKey(m map[string]bool) string {
	for k := range m {
		return k
	}
	return ""
}

func TestShutdownDestroysWarmSandboxes(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t)
	p, err := pool.New(pool.Config{NodeID: "node-1", Size: map[drydock.Profile]int{drydock.ProfileHeadless: 2}}, pool.Deps{Runtime: rt, Ready: ready})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	waitFor(t, "a full pool", func() bool { return p.Idle(drydock.ProfileHeadless) == 2 })
	claimed, err := p.Claim(context.Background(), spec("job-1"))
	if err != nil || claimed == nil {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	cancel()
	<-done
	if left := warmIDs(t, rt, p.Owner()); len(left) != 0 {
		t.Errorf("warm sandboxes left after shutdown: %v", left)
	}
	if _, err := rt.Get(context.Background(), claimed.ID); err != nil {
		t.Errorf("the claimed sandbox belongs to its job and must stay: %v", err)
	}
	if sb, err := p.Claim(context.Background(), spec("job-2")); sb != nil || err != nil {
		t.Errorf("claim after shutdown: %v, %v", sb, err)
	}
}

func TestBadConfigIsRefused(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t)
	for name, cfg := range map[string]pool.Config{
		"unknown profile": {Size: map[drydock.Profile]int{"gpu": 1}},
		"negative size":   {Size: map[drydock.Profile]int{drydock.ProfileHeadless: -1}},
	} {
		if _, err := pool.New(cfg, pool.Deps{Runtime: rt, Ready: ready}); drydock.ErrorCode(err) != drydock.EINVALID {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
}
