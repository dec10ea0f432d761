package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/pool"
	"github.com/drydockhq/drydock/runner"
	"github.com/drydockhq/drydock/toolbox"
	"github.com/drydockhq/drydock/toolbox/hostclient"
)

// PoolOptions size the warm pool.
type PoolOptions struct {
	Headless int           `default:"0" env:"DRYDOCK_POOL_HEADLESS" help:"Headless sandboxes kept started and ready for the next jobs (0: none; each job then starts its own)."`
	Desktop  int           `default:"0" env:"DRYDOCK_POOL_DESKTOP" help:"Desktop sandboxes kept started and ready for the next jobs (0: none)."`
	MaxAge   time.Duration `default:"30m" env:"DRYDOCK_POOL_MAX_AGE" help:"How long a warm sandbox may wait for a job before it is replaced by a fresh one."`
}

// claimer is the server's runtime (which forgets a sandbox's toolbox
// clients when it is destroyed) with the claim of the engine's runtime.
type claimer struct {
	drydock.Runtime
	under pool.Runtime
}

func (c claimer) Claim(ctx context.Context, id, jobID string) (*drydock.Sandbox, error) {
	return c.under.Claim(ctx, id, jobID)
}

// ImageID lets the pool notice a rebuilt image when the runtime can tell;
// an empty id means it cannot, and the pool then goes by age alone.
func (c claimer) ImageID(ctx context.Context, ref string) (string, error) {
	if r, ok := c.under.(pool.ImageResolver); ok {
		return r.ImageID(ctx, ref)
	}
	return "", nil
}

// warmComponents are what a warm sandbox waits for besides files and
// shell, so that a job's first call of any kind finds it ready: the code
// kernel, and a desktop's display.
var warmComponents = map[drydock.Profile][]string{
	drydock.ProfileHeadless: {toolbox.ComponentKernel},
	drydock.ProfileDesktop:  {toolbox.ComponentKernel, toolbox.ComponentDisplay, toolbox.ComponentWindowManager, toolbox.ComponentVNC},
}

// warmPool returns the pool of warm sandboxes for the runner's jobs, or nil
// when no pool is asked for.
func (c *ServerCmd) warmPool(rt, engine drydock.Runtime, tb *hostclient.Clients, cfg runner.Config, reg prometheus.Registerer, log *slog.Logger) (*pool.Pool, error) {
	o := c.Pool
	if o.Headless < 0 || o.Desktop < 0 {
		return nil, fmt.Errorf("--pool-headless and --pool-desktop must be 0 or more")
	}
	if o.Headless == 0 && o.Desktop == 0 {
		return nil, nil
	}
	if o.MaxAge <= 0 {
		return nil, fmt.Errorf("--pool-max-age must be positive")
	}
	under, ok := engine.(pool.Runtime)
	if !ok {
		return nil, fmt.Errorf("the %s runtime cannot keep warm sandboxes; drop --pool-headless and --pool-desktop, or use --runtime docker", rt.Name())
	}
	p, err := pool.New(pool.Config{
		NodeID:    cfg.NodeID,
		Size:      map[drydock.Profile]int{drydock.ProfileHeadless: o.Headless, drydock.ProfileDesktop: o.Desktop},
		MaxAge:    o.MaxAge,
		Images:    cfg.Images,
		Resources: cfg.Resources,
	}, pool.Deps{
		Runtime: claimer{Runtime: rt, under: under},
		Ready: func(ctx context.Context, sb *drydock.Sandbox) error {
			return tb.Get(sb).WaitReady(ctx, warmComponents[sb.Profile]...)
		},
		Logger: log,
	})
	if err != nil {
		return nil, err
	}
	for _, prof := range []drydock.Profile{drydock.ProfileHeadless, drydock.ProfileDesktop} {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "drydock_pool_idle", Help: "Warm sandboxes ready for a job, by profile.",
			ConstLabels: prometheus.Labels{"profile": string(prof)},
		}, func() float64 { return float64(p.Idle(prof)) }))
	}
	log.Info("warm pool", "headless", o.Headless, "desktop", o.Desktop, "max_age", o.MaxAge)
	return p, nil
}
