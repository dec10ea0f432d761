package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/drydockhq/drydock"
)

// fitBudget is the machine size of the density target.
const fitBudget = 24 << 30

// fitReserve is what the fit projection keeps for the host, the engine and
// the orchestrator.
const fitReserve = 2 << 30

// Density starts idle desktop sandboxes one by one, each until its display
// and VNC are ready, up to opts.DensityMax or until the host's MemAvailable
// would fall below opts.DensityReserveMiB; lets them settle; reads each
// one's memory from its cgroup; and destroys them all, also when ctx ends
// (Ctrl-C) or a step fails.
func (s *Suite) Density(ctx context.Context, e *engine) (err error) {
	var live []*sandbox
	defer func() {
		s.report.Logf("density %s: destroying %d sandboxes", e.Name, len(live))
		for _, sb := range live {
			if derr := e.destroy(ctx, sb); err == nil {
				err = derr
			}
		}
	}()
	availStart, err := MemAvailable()
	if err != nil {
		return err
	}
	reserve := int64(s.opts.DensityReserveMiB) << 20
	stop := fmt.Sprintf("stopped at the bound of %d (--density-max)", s.opts.DensityMax)
	var ready []time.Duration
	for len(live) < s.opts.DensityMax {
		avail, err := MemAvailable()
		if err != nil {
			return err
		}
		if avail < reserve {
			stop = fmt.Sprintf("stopped early: host MemAvailable %.0f MiB fell below the safety margin of %d MiB", mib(avail), s.opts.DensityReserveMiB)
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		t0 := time.Now()
		sb, err := e.create(cctx, drydock.ProfileDesktop)
		if err == nil {
			live = append(live, sb)
			err = sb.tc.WaitReady(cctx, readyComponents(drydock.ProfileDesktop)...)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("desktop sandbox %d on %s: %w", len(live), e.Name, err)
		}
		ready = append(ready, time.Since(t0))
		s.report.Logf("density %s: %d idle desktop sandboxes, host MemAvailable %.0f MiB", e.Name, len(live), mib(avail))
	}
	// Idle means idle: let start-up work (kernel imports, fonts) finish.
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(s.opts.DensitySettle):
	}
	var used, stats, cache, shmem, cost []float64
	for _, sb := range live {
		m, err := e.memory(ctx, sb.ID)
		if err != nil {
			return err
		}
		used, stats = append(used, mib(m.Used)), append(stats, mib(m.EngineStats))
		cache, shmem = append(cache, mib(m.Cache)), append(shmem, mib(m.Shmem))
		cost = append(cost, mib(m.Used+m.Shim))
	}
	availEnd, err := MemAvailable()
	if err != nil {
		return err
	}
	n := len(live)
	if n == 0 {
		return fmt.Errorf("density on %s: no sandbox started (%s)", e.Name, stop)
	}
	u, c := Values(used), Values(cost)
	hostPer := mib(availStart-availEnd) / float64(n)
	fit := math.Floor(mib(fitBudget-fitReserve) / c.Max)
	cached, sh := Values(cache), Values(shmem)
	s.report.Add(
		Result{Name: "density.sandboxes", Engine: e.Name, Profile: "desktop", Unit: "sandboxes", Value: ptr(float64(n)), Note: stop},
		Result{Name: "density.ready", Engine: e.Name, Profile: "desktop", Unit: "ms", Dist: dist(ready), Note: "create → VNC usable while the others idle"},
		Result{Name: "density.memory", Engine: e.Name, Profile: "desktop", Unit: "MiB", Dist: &u,
			Extra: map[string]float64{"droppable_cache_p50": cached.P50, "shmem_p50": sh.P50},
			Note:  "per sandbox: cgroup usage less droppable page cache (tmpfs kept), read from the host's cgroup files"},
		Result{Name: "density.memory", Engine: e.Name, Profile: "desktop", Mode: "engine-stats", Unit: "MiB", Dist: distOf(stats),
			Note: "the engine's stats API, usage less inactive file pages as `docker stats` computes it; Podman's compat API sends no cache fields, so its figure keeps the page cache"},
		Result{Name: "density.memory", Engine: e.Name, Profile: "desktop", Mode: "with shim", Unit: "MiB", Dist: &c,
			Note: "per sandbox: the cgroup figure plus the PSS of the engine's per-container process (containerd-shim, conmon)"},
		Result{Name: "density.host_per_sandbox", Engine: e.Name, Profile: "desktop", Unit: "MiB", Value: ptr(round(hostPer)),
			Note: "drop of host MemAvailable divided by the sandboxes: a cross-check only, since other work on a shared machine moves it"},
		Result{Name: "density.fit_24gib", Engine: e.Name, Profile: "desktop", Unit: "sandboxes", Value: ptr(fit),
			Note: fmt.Sprintf("(24 GiB − 2 GiB for the host) / %.1f MiB, the costliest sandbox with its shim", c.Max)},
	)
	return nil
}
