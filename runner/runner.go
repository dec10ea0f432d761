package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/pool"
	"github.com/drydockhq/drydock/secretbox"
	"github.com/drydockhq/drydock/toolbox"
)

// Toolbox is what the runner needs from a sandbox's toolboxd.
type Toolbox interface {
	WaitReady(ctx context.Context) error
	// DownloadTar streams an uncompressed tar of a directory of the workspace.
	DownloadTar(ctx context.Context, path string) (io.ReadCloser, error)
	// SetEnv gives every process started in the sandbox from now on the
	// job's secrets as variables (toolboxd's PUT /v1/env).
	SetEnv(ctx context.Context, env map[string]string) (*toolbox.EnvResult, error)
	// Exec runs one process in the sandbox (installing trusted CAs).
	Exec(ctx context.Context, req toolbox.ExecRequest, stdout, stderr io.Writer) (*toolbox.ExecResult, error)
	// Sessions, Interrupt and RestartSession give a recovered job its
	// shells back (shells.go).
	Sessions(ctx context.Context) ([]toolbox.Session, error)
	Interrupt(ctx context.Context, session string) (*toolbox.RunResult, error)
	RestartSession(ctx context.Context, id string) (*toolbox.Session, error)
	// UploadTar unpacks a tar or tar.gz stream into a directory of the
	// workspace (the job's uploaded input: seed.go).
	UploadTar(ctx context.Context, dir string, r io.Reader) (*toolbox.TarResult, error)
}

// Config tunes a Runner. Zero values take the defaults noted.
type Config struct {
	// NodeID names this server across restarts (default: the host name). The
	// lease owner is NodeID plus a random incarnation suffix.
	NodeID         string
	MaxConcurrent  int           // default 2
	LeaseTTL       time.Duration // default 10s
	PollInterval   time.Duration // default 1s; Notify wakes the loop sooner
	DefaultTimeout time.Duration // default 30m
	DefaultProfile drydock.Profile
	// Images maps a profile to the sandbox image to start.
	Images    map[drydock.Profile]string
	Resources drydock.Resources
	// ReadyTimeout bounds the wait for a new sandbox's toolboxd (default 2m).
	ReadyTimeout time.Duration
	// ArchiveTimeout bounds archiving the workspace at the end (default 10m).
	ArchiveTimeout time.Duration
	// ReapInterval is how often sandboxes of finished jobs are looked for
	// (default 1m).
	ReapInterval time.Duration
	// TrustedCAs are PEM certificates every sandbox's processes trust
	// besides the image's own (--sandbox-ca): installed with the image's
	// bundle into the sandbox before the agent starts (trust.go).
	TrustedCAs []byte
	// OrphanGrace is how long after its job ended another node's sandbox is
	// left to that node before the reaper takes it (default 2m).
	OrphanGrace time.Duration
	// PauseMax ends a pause that lasted longer (the job resumes by
	// itself); default 1h, negative for no limit. PausePoll is how often
	// a paused job's state is read while its agent waits (default 500ms).
	PauseMax  time.Duration
	PausePoll time.Duration
	// FollowUpSecrets is how long a finished job that has an archive keeps
	// its sealed secrets for a follow-up to inherit; 0 erases
	// them when the job ends. The reaper erases them after it.
	FollowUpSecrets time.Duration
}

func (c *Config) setDefaults() {
	if c.NodeID == "" {
		c.NodeID = "drydock"
	}
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = 2
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 10 * time.Second
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.DefaultTimeout <= 0 {
		c.DefaultTimeout = 30 * time.Minute
	}
	if c.DefaultProfile == "" {
		c.DefaultProfile = drydock.ProfileHeadless
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = 2 * time.Minute
	}
	if c.ArchiveTimeout <= 0 {
		c.ArchiveTimeout = 10 * time.Minute
	}
	if c.OrphanGrace <= 0 {
		c.OrphanGrace = 2 * time.Minute
	}
	if c.ReapInterval <= 0 {
		c.ReapInterval = time.Minute
	}
	if c.PauseMax == 0 {
		c.PauseMax = time.Hour
	}
	if c.PausePoll <= 0 {
		c.PausePoll = 500 * time.Millisecond
	}
}

// Deps are the backends a Runner composes.
type Deps struct {
	Store     drydock.Store
	Runtime   drydock.Runtime
	Agent     drydock.Agent
	Artifacts drydock.ArtifactStore
	// Toolbox connects to a sandbox's toolboxd.
	Toolbox func(*drydock.Sandbox) Toolbox
	Logger  *slog.Logger
	Metrics *Metrics // optional
	// Pool, if set, gives jobs warm sandboxes; Run runs it (filling it,
	// and emptying it at shutdown).
	Pool *pool.Pool
	// Egress, if set, opens a sandbox's way out for a job once the sandbox
	// is ready (the egress proxy's listener, or the runtime's own policy)
	// and is closed when this process stops running the job.
	Egress func(ctx context.Context, job *drydock.Job, sb *drydock.Sandbox) (io.Closer, error)
	// Secrets opens jobs' sealed secrets; nil: jobs with secrets fail.
	Secrets *secretbox.Box
}

// Runner executes jobs from the store.
type Runner struct {
	cfg   Config
	deps  Deps
	log   *slog.Logger
	owner string
	wake  chan struct{}

	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
	wg      sync.WaitGroup
}

// Causes of a job context's end; they decide the job's final state.
var (
	errCancelled = errors.New("cancelled by request")
	errTimeout   = errors.New("job timed out")
	errShutdown  = errors.New("server shutting down")
	errLeaseLost = errors.New("lease lost to another worker")
)

// New returns a Runner. It does nothing until Run.
func New(cfg Config, deps Deps) *Runner {
	cfg.setDefaults()
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &Runner{
		cfg:     cfg,
		deps:    deps,
		log:     deps.Logger.With("component", "runner"),
		owner:   cfg.NodeID + ":" + hex.EncodeToString(b[:]),
		wake:    make(chan struct{}, 1),
		running: map[string]context.CancelCauseFunc{},
	}
}

// Owner is the lease owner name of this runner.
func (r *Runner) Owner() string { return r.owner }

// Notify wakes the claim loop, e.g. right after a job was created.
func (r *Runner) Notify() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Cancel stops a job running in this process at once. Jobs on other servers
// see the request at their next heartbeat.
func (r *Runner) Cancel(id string) {
	r.mu.Lock()
	cancel := r.running[id]
	r.mu.Unlock()
	if cancel != nil {
		cancel(errCancelled)
	}
}

// Running reports how many jobs this runner is executing.
func (r *Runner) Running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.running)
}

// Run claims and executes jobs until ctx ends, then stops the jobs it runs
// without finishing them (their leases are released so that the next server
// resumes them) and returns once they have all stopped.
func (r *Runner) Run(ctx context.Context) error {
	if n, err := r.deps.Store.ExpireLeases(ctx, r.cfg.NodeID+":", r.owner); err != nil {
		return fmt.Errorf("recover leases of previous run: %w", err)
	} else if n > 0 {
		r.log.Info("recovering jobs left running by a previous process", "jobs", n)
	}
	jobCtx, stopJobs := context.WithCancelCause(context.WithoutCancel(ctx))
	defer func() {
		stopJobs(errShutdown)
		r.wg.Wait()
	}()

	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.reapLoop(ctx)
	}()
	if r.deps.Pool != nil {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.deps.Pool.Run(ctx)
		}()
	}

	ticker := time.NewTicker(r.cfg.PollInterval)
	defer ticker.Stop()
	for {
		r.claimAvailable(ctx, jobCtx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-r.wake:
		}
	}
}

// claimAvailable claims jobs until the slots are full or the queue is empty.
func (r *Runner) claimAvailable(ctx, jobCtx context.Context) {
	for r.Running() < r.cfg.MaxConcurrent && ctx.Err() == nil {
		job, err := r.deps.Store.ClaimJob(ctx, r.owner, r.cfg.LeaseTTL)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Error("claim job", "err", err)
			}
			return
		}
		if job == nil {
			return
		}
		r.start(jobCtx, job)
	}
}

func (r *Runner) start(parent context.Context, job *drydock.Job) {
	ctx, cancel := context.WithCancelCause(parent)
	r.mu.Lock()
	r.running[job.ID] = cancel
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() {
			r.mu.Lock()
			delete(r.running, job.ID)
			r.mu.Unlock()
			cancel(nil)
			r.Notify() // a slot is free
		}()
		r.execute(ctx, cancel, job)
	}()
}
