package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/pool"
	"github.com/drydockhq/drydock/runtime/docker"
	"github.com/drydockhq/drydock/toolbox"
)

// Isolations are the columns of the isolation measure, in table order.
var Isolations = []string{drydock.IsolationRunc, drydock.IsolationGVisor}

// isolationProfile is what the isolation measure starts: the headless
// sandbox, whose cost is the runtime's and toolboxd's, not a desktop's.
const isolationProfile = drydock.ProfileHeadless

// isolated is one engine with its sandboxes under one isolation.
type isolated struct {
	*engine
	isolation string
}

// Isolation measures the same things under runc and under gVisor on one
// engine, interleaving the two so that a change of load on a shared machine
// falls on both columns: cold start, warm claim, the tool round trip, the
// first Python result (a python3 process and toolboxd's Jupyter kernel),
// idle memory per sandbox as the host pays it, and the density that
// follows. An isolation the engine cannot give is recorded as unavailable,
// with the reason, and the other is still measured.
func (s *Suite) Isolation(ctx context.Context, e *engine) error {
	var cols []*isolated
	defer func() {
		for _, c := range cols {
			c.close()
		}
	}()
	for _, iso := range Isolations {
		c, why, err := s.openIsolated(ctx, e, iso)
		if err != nil {
			return err
		}
		if c == nil {
			for _, name := range isolationResults {
				s.report.Add(Result{Name: name, Engine: e.Name, Profile: string(isolationProfile), Mode: iso, Unavailable: why})
			}
			continue
		}
		cols = append(cols, c)
	}
	if len(cols) == 0 {
		return nil
	}
	var errs []error
	for _, step := range []func(context.Context, []*isolated) error{s.isoColdStarts, s.isoWarmClaims, s.isoRoundTrips, s.isoIdleMemory} {
		if ctx.Err() != nil {
			break
		}
		errs = append(errs, step(ctx, cols))
	}
	return errors.Join(errs...)
}

// isolationResults are the names every column carries, measured or not.
var isolationResults = []string{
	"isolation.cold_start", "isolation.warm_claim", "isolation.tool_roundtrip",
	"isolation.first_python", "isolation.first_kernel",
	"isolation.idle_memory", "isolation.idle_memory.cgroup", "isolation.idle_memory.processes", "isolation.density",
}

// openIsolated makes a runtime on e's engine whose sandboxes run under iso,
// checked the way the server checks it (a probe container must report
// gVisor's kernel, or not). A nil column and a reason mean the engine
// cannot give iso.
func (s *Suite) openIsolated(ctx context.Context, e *engine, iso string) (*isolated, string, error) {
	dir, err := os.MkdirTemp("", "dd-bench-")
	if err != nil {
		return nil, "", err
	}
	rt, err := docker.New(docker.Options{Host: e.Host, ServerID: s.serverID, StateDir: dir, Images: e.images})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	c := &isolated{engine: &engine{Engine: e.Engine, rt: rt, images: e.images, stateDir: dir}, isolation: iso}
	mode := docker.ModeRunc
	if iso == drydock.IsolationGVisor {
		mode = docker.ModeGVisor
	}
	got, _, err := rt.ResolveIsolation(ctx, mode, e.image(isolationProfile))
	switch {
	case err != nil && drydock.ErrorCode(err) == drydock.EINVALID && iso == drydock.IsolationGVisor:
		c.close()
		return nil, drydock.ErrorMessage(err), nil
	case err != nil:
		c.close()
		return nil, "", fmt.Errorf("%s on %s: %w", iso, e.Name, err)
	case got != iso:
		// Podman whose service runs every container under runsc has no runc.
		c.close()
		return nil, fmt.Sprintf("the engine runs every container under %s", got), nil
	}
	s.report.Logf("isolation %s: %s ready", e.Name, iso)
	return c, "", nil
}

func (c *isolated) result(name, unit, note string) Result {
	return Result{Name: name, Engine: c.Name, Profile: string(isolationProfile), Mode: c.isolation, Unit: unit, Note: note}
}

// isoColdStarts makes opts.N sandboxes per column, one at a time and the
// columns taking turns: Create → toolboxd's core ready, then a python3
// process's first result and the Jupyter kernel's.
func (s *Suite) isoColdStarts(ctx context.Context, cols []*isolated) error {
	cold := make([][]time.Duration, len(cols))
	python := make([][]time.Duration, len(cols))
	kernel := make([][]time.Duration, len(cols))
	kernelErr := make([]error, len(cols))
	for i := range s.opts.N {
		for j, c := range cols {
			s.report.Logf("isolation %s %s cold start %d/%d", c.Name, c.isolation, i+1, s.opts.N)
			ictx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			err := c.withCreated(ictx, func(sb *sandbox, t0 time.Time) error {
				if err := sb.tc.WaitReady(ictx); err != nil {
					return err
				}
				cold[j] = append(cold[j], time.Since(t0))
				t1 := time.Now()
				if err := python3(ictx, sb.tc); err != nil {
					return err
				}
				python[j] = append(python[j], time.Since(t1))
				if kernelErr[j] != nil {
					return nil
				}
				t2 := time.Now()
				if err := firstPython(ictx, sb.tc); err != nil {
					kernelErr[j] = err
					return nil
				}
				kernel[j] = append(kernel[j], time.Since(t2))
				return nil
			})
			cancel()
			if err != nil {
				return fmt.Errorf("%s cold start on %s: %w", c.isolation, c.Name, err)
			}
		}
	}
	for j, c := range cols {
		r := c.result("isolation.cold_start", "ms", "Create → toolboxd reports files and shell ready")
		r.Dist = dist(cold[j])
		p := c.result("isolation.first_python", "ms", "ready → python3 -c 'print(1)' answered, through toolboxd's exec")
		p.Dist = dist(python[j])
		k := c.result("isolation.first_kernel", "ms", "after the python3 run → the resident Jupyter kernel's first result (print(6*7))")
		if kernelErr[j] != nil {
			k.Unavailable = "toolboxd's kernel did not answer: " + drydock.ErrorMessage(kernelErr[j])
		} else {
			k.Dist = dist(kernel[j])
		}
		s.report.Add(r, p, k)
	}
	return nil
}

// withCreated creates a sandbox, runs f with it and the time Create was
// called, and destroys it whatever happens.
func (c *isolated) withCreated(ctx context.Context, f func(*sandbox, time.Time) error) (err error) {
	t0 := time.Now()
	sb, err := c.create(ctx, isolationProfile)
	if err != nil {
		return err
	}
	defer func() {
		if derr := c.destroy(ctx, sb); err == nil {
			err = derr
		}
	}()
	return f(sb, t0)
}

// python3 runs python3 -c 'print(1)' as a new process in the sandbox.
func python3(ctx context.Context, tc *toolbox.Client) error {
	var out strings.Builder
	r, err := tc.Exec(ctx, toolbox.ExecRequest{Args: []string{"python3", "-c", "print(1)"}}, &out, io.Discard)
	if err != nil {
		return fmt.Errorf("python3: %w", err)
	}
	if r.ExitCode != 0 || strings.TrimSpace(out.String()) != "1" {
		return fmt.Errorf("python3 -c 'print(1)' exited %d printing %q", r.ExitCode, out.String())
	}
	return nil
}

// isoWarmClaims measures what a job waits for when a pool has a ready
// sandbox: the claim (fresh secrets installed through toolboxd) and the
// first call with the new token. Each column's pool keeps one sandbox; the
// next claim waits until it has refilled, which is not timed.
func (s *Suite) isoWarmClaims(ctx context.Context, cols []*isolated) error {
	claims := make([][]time.Duration, len(cols))
	for j, c := range cols {
		err := c.withPool(ctx, func(p *pool.Pool) error {
			for i := range s.opts.N {
				s.report.Logf("isolation %s %s warm claim %d/%d", c.Name, c.isolation, i+1, s.opts.N)
				d, err := c.claimOnce(ctx, p)
				if err != nil {
					return err
				}
				claims[j] = append(claims[j], d)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s warm claim on %s: %w", c.isolation, c.Name, err)
		}
		r := c.result("isolation.warm_claim", "ms", "a pool's ready sandbox: Claim (fresh secrets) → first `true` answered with the new token")
		r.Dist = dist(claims[j])
		s.report.Add(r)
	}
	return nil
}

// withPool runs f with a one-sandbox pool of c's runtime and stops the
// pool afterwards, which destroys what it still holds.
func (c *isolated) withPool(ctx context.Context, f func(*pool.Pool) error) error {
	p, err := pool.New(pool.Config{
		NodeID: "bench", Size: map[drydock.Profile]int{isolationProfile: 1},
		Images: map[drydock.Profile]string{isolationProfile: c.image(isolationProfile)},
	}, pool.Deps{Runtime: c.rt, Ready: func(ctx context.Context, sb *drydock.Sandbox) error {
		tc := toolbox.New(sb.Endpoint, sb.Token)
		defer tc.Close()
		return tc.WaitReady(ctx)
	}})
	if err != nil {
		return err
	}
	pctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(pctx)
	}()
	defer func() {
		stop()
		<-done
	}()
	return f(p)
}

// claimOnce waits (untimed) until the pool has a ready sandbox, then times
// its claim and first call, and destroys the claimed sandbox.
func (c *isolated) claimOnce(ctx context.Context, p *pool.Pool) (time.Duration, error) {
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for p.Idle(isolationProfile) == 0 {
		p.Refill()
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, fmt.Errorf("the pool has no ready sandbox after 3 minutes: %w", wctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t0 := time.Now()
	claimed, err := p.Claim(wctx, drydock.SandboxSpec{JobID: "bench-" + drydock.RandomHex(4), Image: c.image(isolationProfile), Profile: isolationProfile})
	if err != nil {
		return 0, err
	}
	if claimed == nil {
		return 0, errors.New("the pool had a ready sandbox but gave none")
	}
	sb := &sandbox{Sandbox: claimed, tc: toolbox.New(claimed.Endpoint, claimed.Token)}
	defer c.destroy(ctx, sb)
	if err := trueOnce(wctx, sb.tc); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// trueOnce runs `true` as a one-shot process through toolboxd.
func trueOnce(ctx context.Context, tc *toolbox.Client) error {
	r, err := tc.Exec(ctx, toolbox.ExecRequest{Args: []string{"true"}}, io.Discard, io.Discard)
	if err == nil && r.ExitCode != 0 {
		err = fmt.Errorf("true exited %d", r.ExitCode)
	}
	return err
}

// isoRoundTrips times opts.RoundTrips execs of `true` through toolboxd in
// one ready sandbox per column, the columns taking turns.
func (s *Suite) isoRoundTrips(ctx context.Context, cols []*isolated) (err error) {
	sbs := make([]*sandbox, len(cols))
	defer func() {
		for j, sb := range sbs {
			if sb != nil {
				if derr := cols[j].destroy(ctx, sb); err == nil {
					err = derr
				}
			}
		}
	}()
	for j, c := range cols {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		sbs[j], err = c.create(rctx, isolationProfile)
		if err == nil {
			err = sbs[j].tc.WaitReady(rctx)
		}
		if err == nil {
			err = trueOnce(rctx, sbs[j].tc) // connection set-up is not counted
		}
		cancel()
		if err != nil {
			return fmt.Errorf("%s round trips on %s: %w", c.isolation, c.Name, err)
		}
	}
	trips := make([][]time.Duration, len(cols))
	for i := range s.opts.RoundTrips {
		if i%50 == 0 {
			s.report.Logf("isolation round trips %d/%d", i, s.opts.RoundTrips)
		}
		for j, c := range cols {
			t0 := time.Now()
			if err := trueOnce(ctx, sbs[j].tc); err != nil {
				return fmt.Errorf("%s round trip on %s: %w", c.isolation, c.Name, err)
			}
			trips[j] = append(trips[j], time.Since(t0))
		}
	}
	for j, c := range cols {
		r := c.result("isolation.tool_roundtrip", "ms", "`true` as a one-shot process through toolboxd's exec (fork+exec inside the sandbox)")
		r.Dist = dist(trips[j])
		s.report.Add(r)
	}
	return nil
}

// isoIdleMemory starts opts.IsolationIdle sandboxes per column and keeps
// them all idle at once, lets them settle, reads what each costs the host,
// and destroys them (also on Ctrl-C). Density follows from the costliest.
func (s *Suite) isoIdleMemory(ctx context.Context, cols []*isolated) (err error) {
	live := make([][]*sandbox, len(cols))
	defer func() {
		for j, list := range live {
			for _, sb := range list {
				if derr := cols[j].destroy(ctx, sb); err == nil {
					err = derr
				}
			}
		}
	}()
	availStart, err := MemAvailable()
	if err != nil {
		return err
	}
	reserve := int64(s.opts.DensityReserveMiB) << 20
	for i := range s.opts.IsolationIdle {
		for j, c := range cols {
			if avail, err := MemAvailable(); err != nil {
				return err
			} else if avail < reserve {
				return fmt.Errorf("host MemAvailable %.0f MiB fell below the safety margin of %d MiB after %d idle sandboxes", mib(avail), s.opts.DensityReserveMiB, i)
			}
			rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			sb, err := c.create(rctx, isolationProfile)
			if err == nil {
				live[j] = append(live[j], sb)
				err = sb.tc.WaitReady(rctx)
			}
			cancel()
			if err != nil {
				return fmt.Errorf("%s idle sandbox on %s: %w", c.isolation, c.Name, err)
			}
		}
		s.report.Logf("isolation idle: %d sandboxes per isolation", i+1)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(s.opts.DensitySettle):
	}
	availEnd, err := MemAvailable()
	if err != nil {
		return err
	}
	started := 0
	for _, list := range live {
		started += len(list)
	}
	for j, c := range cols {
		var host, cg, pss, anon, file, memfd, pssShmem, shim []float64
		for _, sb := range live[j] {
			m, err := c.hostMemory(ctx, sb.ID)
			if err != nil {
				return err
			}
			host, cg, pss = append(host, mib(m.Host())), append(cg, mib(m.Cgroup.Used)), append(pss, mib(m.ProcessMem))
			anon, file, memfd = append(anon, mib(m.PssAnon)), append(file, mib(m.PssFile)), append(memfd, mib(m.Memfd))
			pssShmem, shim = append(pssShmem, mib(m.PssShmem)), append(shim, mib(m.Shim))
		}
		h := Values(host)
		hr := c.result("isolation.idle_memory", "MiB", "what the host pays per idle sandbox: the larger of its memory cgroup (usage less droppable page cache, plus the PSS of its processes outside that cgroup) and the PSS of all its host processes, plus the engine's shim")
		hr.Dist = &h
		cr := c.result("isolation.idle_memory.cgroup", "MiB", "the container's memory cgroup alone, usage less droppable page cache")
		cr.Dist = distOf(cg)
		pr := c.result("isolation.idle_memory.processes", "MiB", "every host process of the container (runc: the sandbox's processes; gVisor: sentry, gofer and their helpers), shim excluded: PSS of private memory and mapped files, plus the resident pages of the memfds they hold (gVisor's memory file) read with mincore")
		pr.Dist = distOf(pss)
		pr.Extra = map[string]float64{"pss_anon_p50": Values(anon).P50, "pss_file_p50": Values(file).P50, "memfd_resident_p50": Values(memfd).P50, "pss_shmem_p50": Values(pssShmem).P50}
		hr.Extra = map[string]float64{"shim_p50": Values(shim).P50}
		fit := c.result("isolation.density", "sandboxes", fmt.Sprintf("idle headless sandboxes that fit in 24 GiB less 2 GiB for the host: 22 GiB / %.1f MiB, the costliest measured", h.Max))
		if h.Max > 0 {
			fit.Value = ptr(math.Floor(mib(fitBudget-fitReserve) / h.Max))
		}
		s.report.Add(hr, cr, pr, fit)
	}
	if started > 0 {
		s.report.Add(Result{Name: "isolation.host_per_sandbox", Engine: cols[0].Name, Profile: string(isolationProfile), Unit: "MiB",
			Value: ptr(round(mib(availStart-availEnd) / float64(started))),
			Note:  fmt.Sprintf("drop of host MemAvailable over all %d idle sandboxes of both columns, per sandbox: a cross-check only, since other work on a shared machine moves it", started)})
	}
	return nil
}

// maxIsolationIdle bounds --isolation-idle: twice that many sandboxes run
// at once on a machine others may share.
const maxIsolationIdle = 20
