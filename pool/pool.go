package pool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/drydockhq/drydock"
)

// LabelPool marks a sandbox a pool started; its value is the pool's owner
// (node id plus a random incarnation), so that sandboxes a previous process
// left warm can be told from this one's.
const LabelPool = "drydock.pool"

// Runtime is a drydock.Runtime that can hand one of its warm sandboxes to a
// job. Claim must install fresh secrets (the old ones stop working), make
// Get and List report the sandbox with the new secrets and with
// drydock.job = jobID from then on, and fail with ECONFLICT when the
// sandbox was claimed before.
type Runtime interface {
	drydock.Runtime
	Claim(ctx context.Context, id, jobID string) (*drydock.Sandbox, error)
}

// ImageResolver is implemented by runtimes that can say which image a
// reference names now; with it the pool replaces warm sandboxes whose tag
// moved to a new build.
type ImageResolver interface {
	ImageID(ctx context.Context, ref string) (string, error)
}

// Config sizes a Pool. Zero values take the defaults noted.
type Config struct {
	// NodeID names this server, as the runner's Config.NodeID does.
	NodeID string
	// Size is how many ready sandboxes to keep per profile; a profile
	// missing or at 0 has no pool.
	Size map[drydock.Profile]int
	// MaxAge is how long a warm sandbox may wait for a job before it is
	// replaced (default 30m).
	MaxAge time.Duration
	// Images and Resources are those of the runner's jobs: only a job that
	// asks for exactly these gets a warm sandbox.
	Images    map[drydock.Profile]string
	Resources drydock.Resources
	// CheckInterval is how often ages and image ids are checked and the
	// pool is topped up even without a claim (default 10s).
	CheckInterval time.Duration
	// ReadyTimeout bounds the wait for a new sandbox's readiness
	// (default 2m).
	ReadyTimeout time.Duration
}

func (c *Config) setDefaults() {
	if c.NodeID == "" {
		c.NodeID = "drydock"
	}
	if c.MaxAge <= 0 {
		c.MaxAge = 30 * time.Minute
	}
	if c.CheckInterval <= 0 {
		c.CheckInterval = 10 * time.Second
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = 2 * time.Minute
	}
}

// Deps are what a Pool composes.
type Deps struct {
	Runtime Runtime
	// Ready returns once the sandbox is ready for a job's first call (for
	// a desktop, once the display is up), or an error.
	Ready  func(ctx context.Context, sb *drydock.Sandbox) error
	Logger *slog.Logger
}

// Pool keeps ready sandboxes per profile and hands each to one job.
type Pool struct {
	cfg   Config
	rt    Runtime
	ready func(context.Context, *drydock.Sandbox) error
	log   *slog.Logger
	owner string
	wake  chan struct{}

	mu     sync.Mutex
	idle   map[drydock.Profile][]*warm
	images map[drydock.Profile]string // image id per profile, when known
	closed bool
	// retire collects sandboxes taken out of the pool for destruction by
	// the refill loop; destroying takes engine time a claim must not wait.
	retire []*warm
}

// warm is one ready, unclaimed sandbox.
type warm struct {
	sb      *drydock.Sandbox
	imageID string
	born    time.Time
}

// New returns a pool; nothing starts until Run.
func New(cfg Config, deps Deps) (*Pool, error) {
	cfg.setDefaults()
	if deps.Runtime == nil || deps.Ready == nil {
		return nil, errors.New("pool: a runtime and a readiness check are required")
	}
	for p, n := range cfg.Size {
		if !p.Valid() {
			return nil, drydock.Errorf(drydock.EINVALID, "pool: unknown profile %q", p)
		}
		if n < 0 {
			return nil, drydock.Errorf(drydock.EINVALID, "pool: size of %s is negative", p)
		}
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &Pool{
		cfg:    cfg,
		rt:     deps.Runtime,
		ready:  deps.Ready,
		log:    deps.Logger.With("component", "pool"),
		owner:  cfg.NodeID + ":" + hex.EncodeToString(b[:]),
		wake:   make(chan struct{}, 1),
		idle:   map[drydock.Profile][]*warm{},
		images: map[drydock.Profile]string{},
	}, nil
}

// Owner is the value of LabelPool on this pool's sandboxes.
func (p *Pool) Owner() string { return p.owner }

// placeholderJob is the job id of a warm sandbox until a job claims it.
func placeholderJob(owner string) string { return "pool:" + owner }

// Unclaimed reports whether sb is a pool's warm sandbox that no job claimed,
// and which pool (Owner) started it.
func Unclaimed(sb *drydock.Sandbox) (owner string, ok bool) {
	owner, ok = sb.Labels[LabelPool]
	return owner, ok && sb.Labels[drydock.LabelJob] == placeholderJob(owner)
}

// Idle returns how many warm sandboxes of the profile wait for a job.
func (p *Pool) Idle(profile drydock.Profile) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle[profile])
}

// Fits reports whether a warm sandbox can serve spec: one with the pool's
// image and resources and no environment or labels of its own. Egress does
// not matter: the runtimes that can claim keep every sandbox off the network
// and the egress proxy applies the job's list once the job has it.
func (p *Pool) Fits(spec drydock.SandboxSpec) bool {
	prof := spec.Profile
	if prof == "" {
		prof = drydock.ProfileHeadless
	}
	if p.cfg.Size[prof] <= 0 || len(spec.Env) > 0 {
		return false
	}
	if spec.Image != "" && spec.Image != p.cfg.Images[prof] {
		return false
	}
	if spec.Resources != p.cfg.Resources {
		return false
	}
	for k, v := range spec.Labels {
		switch k {
		case drydock.LabelManaged, drydock.LabelServer:
		case drydock.LabelJob:
			if v != spec.JobID {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// Claim hands a warm sandbox that fits spec to spec.JobID, with fresh
// secrets. It never waits for a sandbox to start: with none ready (or spec
// not fitting) it returns nil, nil and the caller creates one cold. Each
// warm sandbox goes to one caller only, however many claim at once.
func (p *Pool) Claim(ctx context.Context, spec drydock.SandboxSpec) (*drydock.Sandbox, error) {
	if spec.JobID == "" {
		return nil, drydock.Errorf(drydock.EINVALID, "claim needs a job id")
	}
	if !p.Fits(spec) {
		return nil, nil
	}
	prof := spec.Profile
	if prof == "" {
		prof = drydock.ProfileHeadless
	}
	defer p.Refill()
	for {
		w := p.take(prof)
		if w == nil {
			return nil, nil
		}
		sb, err := p.rt.Claim(ctx, w.sb.ID, spec.JobID)
		if err == nil {
			p.log.Info("warm sandbox claimed", "sandbox_id", sb.ID, "job_id", spec.JobID, "profile", prof, "age", time.Since(w.born).Round(time.Second))
			return sb, nil
		}
		if ctx.Err() != nil {
			p.discard(w)
			return nil, ctx.Err()
		}
		// A warm sandbox that cannot be claimed is broken: drop it and try
		// the next, so one bad sandbox does not send the job to a cold start.
		p.log.Warn("warm sandbox could not be claimed; discarding it", "sandbox_id", w.sb.ID, "err", err)
		p.discard(w)
	}
}

// take removes and returns the oldest usable warm sandbox of the profile;
// the ones too old or of a replaced image are retired on the way.
func (p *Pool) take(prof drydock.Profile) *warm {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	for len(p.idle[prof]) > 0 {
		w := p.idle[prof][0]
		p.idle[prof] = p.idle[prof][1:]
		if p.stale(prof, w) {
			p.retire = append(p.retire, w)
			continue
		}
		return w
	}
	return nil
}

// stale: too old, or made from an image the tag no longer names. Callers
// hold p.mu.
func (p *Pool) stale(prof drydock.Profile, w *warm) bool {
	if time.Since(w.born) > p.cfg.MaxAge {
		return true
	}
	cur := p.images[prof]
	return cur != "" && w.imageID != "" && cur != w.imageID
}

// discard hands a sandbox taken from the pool to the refill loop for
// destruction.
func (p *Pool) discard(w *warm) {
	p.mu.Lock()
	p.retire = append(p.retire, w)
	p.mu.Unlock()
}

// Refill wakes the refill loop.
func (p *Pool) Refill() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run keeps the pool full until ctx ends, then destroys the sandboxes that
// are still warm and returns. Sandboxes are started one at a time, so a
// pool being filled never starves the jobs' own cold starts of the engine.
func (p *Pool) Run(ctx context.Context) error {
	defer p.shutdown()
	t := time.NewTicker(p.cfg.CheckInterval)
	defer t.Stop()
	for {
		p.check(ctx)
		p.fill(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-p.wake:
		}
	}
}

// check resolves the images, retires stale warm sandboxes and destroys the
// retired ones.
func (p *Pool) check(ctx context.Context) {
	if res, ok := p.rt.(ImageResolver); ok {
		for _, prof := range p.profiles() {
			id, err := res.ImageID(ctx, p.cfg.Images[prof])
			if err != nil {
				if ctx.Err() == nil {
					p.log.Warn("resolve sandbox image", "profile", prof, "image", p.cfg.Images[prof], "err", err)
				}
				continue
			}
			p.mu.Lock()
			if old := p.images[prof]; old != "" && old != id {
				p.log.Info("sandbox image changed; replacing warm sandboxes", "profile", prof, "image", p.cfg.Images[prof])
			}
			p.images[prof] = id
			p.mu.Unlock()
		}
	}
	p.mu.Lock()
	for prof, list := range p.idle {
		keep := list[:0]
		for _, w := range list {
			if p.stale(prof, w) {
				p.retire = append(p.retire, w)
			} else {
				keep = append(keep, w)
			}
		}
		p.idle[prof] = keep
	}
	retire := p.retire
	p.retire = nil
	p.mu.Unlock()
	for _, w := range retire {
		p.destroy(ctx, w.sb.ID)
	}
}

// profiles are the profiles with a pool, in a stable order.
func (p *Pool) profiles() []drydock.Profile {
	var out []drydock.Profile
	for _, prof := range slices.Sorted(maps.Keys(p.cfg.Size)) {
		if p.cfg.Size[prof] > 0 {
			out = append(out, prof)
		}
	}
	return out
}

// fill starts sandboxes until every profile has its size, or a start
// fails (the next tick tries again).
func (p *Pool) fill(ctx context.Context) {
	for _, prof := range p.profiles() {
		for ctx.Err() == nil && p.Idle(prof) < p.cfg.Size[prof] {
			w, err := p.start(ctx, prof)
			if err != nil {
				if ctx.Err() == nil {
					p.log.Warn("start warm sandbox", "profile", prof, "err", err)
				}
				break
			}
			p.mu.Lock()
			p.idle[prof] = append(p.idle[prof], w)
			p.mu.Unlock()
		}
	}
}

// start creates one sandbox and waits until it is ready.
func (p *Pool) start(ctx context.Context, prof drydock.Profile) (*warm, error) {
	p.mu.Lock()
	imageID := p.images[prof]
	p.mu.Unlock()
	t0 := time.Now()
	sb, err := p.rt.Create(ctx, drydock.SandboxSpec{
		JobID:     placeholderJob(p.owner),
		Image:     p.cfg.Images[prof],
		Profile:   prof,
		Resources: p.cfg.Resources,
		Labels:    map[string]string{LabelPool: p.owner},
	})
	if err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, p.cfg.ReadyTimeout)
	defer cancel()
	if err := p.ready(rctx, sb); err != nil {
		p.destroy(ctx, sb.ID)
		return nil, fmt.Errorf("sandbox %s not ready: %w", sb.ID, err)
	}
	p.log.Info("warm sandbox ready", "sandbox_id", sb.ID, "profile", prof, "took", time.Since(t0).Round(time.Millisecond))
	return &warm{sb: sb, imageID: imageID, born: time.Now()}, nil
}

// destroy runs even when ctx has ended: a sandbox must not outlive the
// pool that started it.
func (p *Pool) destroy(ctx context.Context, id string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := p.rt.Destroy(dctx, id); err != nil {
		p.log.Warn("destroy warm sandbox; the reaper will retry", "sandbox_id", id, "err", err)
	}
}

// shutdown stops claims and destroys every sandbox still in the pool.
func (p *Pool) shutdown() {
	p.mu.Lock()
	p.closed = true
	var all []*warm
	for _, list := range p.idle {
		all = append(all, list...)
	}
	all = append(all, p.retire...)
	p.idle, p.retire = map[drydock.Profile][]*warm{}, nil
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range all {
		wg.Go(func() { p.destroy(context.Background(), w.sb.ID) })
	}
	wg.Wait()
	if len(all) > 0 {
		p.log.Info("warm sandboxes destroyed at shutdown", "count", len(all))
	}
}
