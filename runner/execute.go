package runner

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/secretbox"
)

// execute runs one claimed job to its end (or to shutdown, when it leaves the
// job running for the next claimer).
func (r *Runner) execute(ctx context.Context, cancel context.CancelCauseFunc, job *drydock.Job) {
	log := r.log.With("job_id", job.ID, "attempt", job.Attempts)
	started := time.Now()
	r.deps.Metrics.started(job.Attempts > 1)

	go r.heartbeat(ctx, cancel, job.ID, log)

	timeout := time.Duration(job.Timeout)
	if timeout <= 0 {
		timeout = r.cfg.DefaultTimeout
	}
	// The timeout counts from the first start, so a job recovered after a
	// restart does not get a fresh allowance.
	if job.StartedAt != nil {
		timeout -= time.Since(*job.StartedAt)
	}
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, max(timeout, 0), errTimeout)
	defer cancelTimeout()

	emit := &emitter{store: r.deps.Store, job: job, log: log}
	if job.Attempts > 1 {
		emit.Emit(ctx, drydock.EventLog, drydock.LogEvent{Level: "info", Node: r.cfg.NodeID, Attempt: job.Attempts, Message: fmt.Sprintf("resuming on %s (attempt %d)", r.cfg.NodeID, job.Attempts)})
	} else {
		emit.Emit(ctx, drydock.EventStatus, drydock.StatusEvent{Status: drydock.StatusRunning, Node: r.cfg.NodeID})
	}
	log.Info("job started")

	var sb *drydock.Sandbox
	reattach := job.SandboxID != ""
	// Secrets are opened before a sandbox exists: a server that cannot
	// open them fails the job without starting one.
	runErr := r.openSecrets(job)
	if runErr == nil {
		emit.values = maskValues(job)
		sb, runErr = r.sandbox(ctx, job, log)
		if runErr == nil && job.SandboxID == "" {
			// Which isolation the job runs under is part of its record
			// (also its isolation field), said once when its sandbox is new.
			emit.Emit(ctx, drydock.EventLog, drydock.LogEvent{Level: "info", Kind: drydock.LogSandbox, SandboxID: sb.ID,
				Isolation: sb.Isolation, Message: fmt.Sprintf("sandbox %s runs under %s", sb.ID, isolationName(sb.Isolation))})
		}
	}
	if runErr == nil {
		var trust map[string]string
		if trust, runErr = r.installCAs(ctx, sb, log); runErr == nil {
			runErr = r.giveSecrets(ctx, job, sb, trust, log)
		}
	}
	if runErr == nil {
		var closeEgress func()
		if closeEgress, runErr = r.attachEgress(ctx, job, sb, log); runErr == nil {
			defer closeEgress()
		}
	}
	if runErr == nil {
		runErr = r.seedWorkspace(ctx, job, sb, reattach, emit, log)
	}
	if runErr == nil {
		runErr = r.seedRepo(ctx, job, sb, emit, reattach, log)
	}
	if runErr == nil && reattach {
		r.recoverShells(ctx, sb, emit, log)
	}
	if runErr == nil && !reattach {
		r.baseline(ctx, job, sb, emit, log)
	}
	var outcome *drydock.AgentOutcome
	switch {
	case runErr == nil && job.NoAgent():
		runErr = r.holdForCaller(ctx, job, sb, emit)
	case runErr == nil:
		outcome, runErr = r.runAgent(ctx, job, sb, emit)
	}

	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errShutdown):
		// Leave the job and its sandbox for the next claimer.
		rctx, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		if err := r.deps.Store.ReleaseLease(rctx, job.ID, r.owner); err != nil {
			log.Warn("release lease at shutdown", "err", err)
		}
		log.Info("job left running for recovery", "reason", "shutdown")
		return
	case errors.Is(cause, errLeaseLost):
		log.Warn("job stopped: lease lost; another worker owns it now")
		return
	}

	result := drydock.JobResult{Status: drydock.StatusComplete}
	held, isHeld := heldResult(job, cause, time.Duration(job.Timeout))
	if job.Timeout == 0 {
		held, isHeld = heldResult(job, cause, r.cfg.DefaultTimeout)
	}
	switch {
	case isHeld && runErr == nil:
		result = held
	case errors.Is(cause, errCancelled):
		result.Status, result.Error = drydock.StatusCancelled, "cancelled by request"
	case errors.Is(cause, errTimeout):
		result.Status = drydock.StatusError
		result.Error = fmt.Sprintf("job timed out after %s", time.Duration(job.Timeout).String())
		if job.Timeout == 0 {
			result.Error = fmt.Sprintf("job timed out after %s", r.cfg.DefaultTimeout)
		}
	case runErr != nil:
		result.Status, result.Error = drydock.StatusError, drydock.ErrorMessage(runErr)
		if drydock.ErrorCode(runErr) == drydock.EINTERNAL {
			result.Error = "internal error: " + runErr.Error()
		}
		log.Warn("job failed", "err", mask(job, runErr.Error()))
	default:
		if outcome != nil {
			result.Summary = outcome.Summary
		}
	}

	if result.Status == drydock.StatusComplete {
		r.pushRepo(ctx, job, sb, emit, &result, log)
	}
	// Archive and tear down on a fresh context: the job's own may be over.
	endCtx, endDone := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.ArchiveTimeout)
	defer endDone()
	if sb != nil {
		key, size, err := r.archive(endCtx, job, sb)
		if err != nil {
			log.Error("archive workspace", "err", mask(job, err.Error()))
			emit.Emit(endCtx, drydock.EventError, drydock.ErrorEvent{Message: "archiving the workspace failed: " + drydock.ErrorMessage(err)})
		} else {
			result.ArtifactKey, result.ArtifactSize = key, size
			emit.Emit(endCtx, drydock.EventArtifact, drydock.ArtifactEvent{Size: size, Format: "tar.gz"})
			// The diff is stored only beside an archive: the API looks for
			// it once the job has one.
			if err := r.storeDiff(endCtx, job, sb, emit); err != nil {
				log.Warn("store the workspace's diff", "err", mask(job, err.Error()))
				emit.Emit(endCtx, drydock.EventLog, drydock.LogEvent{Level: "warn", Message: "the workspace's diff could not be stored: " + drydock.ErrorMessage(err)})
			}
		}
	}
	// The agent masks what it reports; the runner's own messages, and
	// anything that reached them another way, are masked here.
	result.Error, result.Summary = mask(job, result.Error), mask(job, result.Summary)
	if result.Summary != "" {
		emit.Emit(endCtx, drydock.EventSummary, drydock.SummaryEvent{Summary: result.Summary})
	}
	r.noteUndelivered(endCtx, job, emit, log)
	// Only a job with an archive can be followed up.
	result.KeepSecrets = r.cfg.FollowUpSecrets > 0 && len(job.SealedSecrets) > 0 && result.ArtifactKey != ""
	// Finish before destroying: a crash in between leaves a finished job
	// whose sandbox the reaper removes, never a running job whose sandbox is
	// gone.
	if err := r.deps.Store.FinishJob(endCtx, job.ID, r.owner, result); err != nil {
		log.Error("finish job", "err", err)
		return
	}
	r.dropInput(endCtx, job, log)
	if sb != nil {
		if err := r.deps.Runtime.Destroy(endCtx, sb.ID); err != nil {
			log.Error("destroy sandbox; the reaper will retry", "sandbox_id", sb.ID, "err", err)
		}
	} else if job.SandboxID != "" {
		// A recovered job that failed before reattaching (its secrets no
		// longer open under this server's key) leaves a sandbox that holds
		// them in its processes and workspace. It is not archived (the
		// values to mask are unknown) and goes now rather than at the
		// reaper's next pass.
		if err := r.deps.Runtime.Destroy(endCtx, job.SandboxID); err != nil && drydock.ErrorCode(err) != drydock.ENOTFOUND {
			log.Error("destroy the sandbox of a job that did not reattach; the reaper will retry", "sandbox_id", job.SandboxID, "err", err)
		}
	}
	r.deps.Metrics.finished(result.Status, time.Since(started))
	log.Info("job finished", "status", result.Status, "error", result.Error, "duration", time.Since(started).Round(time.Millisecond))
}

// sandbox creates the job's sandbox, or reattaches to it when the job is
// being recovered, and waits until its toolboxd is ready.
func (r *Runner) sandbox(ctx context.Context, job *drydock.Job, log *slog.Logger) (*drydock.Sandbox, error) {
	var sb *drydock.Sandbox
	var acquired func() // records a new sandbox's start once it is ready
	if job.SandboxID != "" {
		got, err := r.deps.Runtime.Get(ctx, job.SandboxID)
		if drydock.ErrorCode(err) == drydock.ENOTFOUND {
			return nil, drydock.Errorf(drydock.EUNAVAILABLE, "the job's sandbox %s is gone (it did not survive the restart of the server or the engine); the job cannot continue", job.SandboxID)
		}
		if err != nil {
			return nil, fmt.Errorf("reattach sandbox %s: %w", job.SandboxID, err)
		}
		log.Info("reattached to sandbox", "sandbox_id", got.ID)
		sb = got
	} else {
		profile := job.Profile
		if profile == "" {
			profile = r.cfg.DefaultProfile
		}
		spec := drydock.SandboxSpec{
			JobID:     job.ID,
			Image:     r.cfg.Images[profile],
			Profile:   profile,
			Resources: r.cfg.Resources,
			Egress:    sandboxEgress(job),
			Labels: map[string]string{
				drydock.LabelManaged: "true",
				drydock.LabelJob:     job.ID,
				drydock.LabelServer:  r.cfg.NodeID,
			},
		}
		t0 := time.Now()
		created, start, err := r.acquire(ctx, spec, log)
		if err != nil {
			return nil, err
		}
		sb = created
		id, isolation := sb.ID, sb.Isolation
		if err := r.deps.Store.UpdateProgress(ctx, job.ID, r.owner, drydock.JobProgress{Steps: job.Steps, Usage: job.Usage, SandboxID: &id, Isolation: &isolation}); err != nil {
			// Without the id in the store a recovery could not find it: drop it.
			_ = r.deps.Runtime.Destroy(context.WithoutCancel(ctx), id)
			return nil, fmt.Errorf("record sandbox: %w", err)
		}
		log.Info("sandbox created", "sandbox_id", id, "runtime", r.deps.Runtime.Name(), "start", start, "took", time.Since(t0).Round(time.Millisecond))
		acquired = func() { r.deps.Metrics.sandboxAcquired(profile, start, time.Since(t0)) }
	}
	rctx, done := context.WithTimeout(ctx, r.cfg.ReadyTimeout)
	defer done()
	if err := r.deps.Toolbox(sb).WaitReady(rctx); err != nil {
		if ctx.Err() != nil {
			return sb, ctx.Err()
		}
		return sb, drydock.Errorf(drydock.EUNAVAILABLE, "sandbox %s did not become ready within %s: %v", sb.ID, r.cfg.ReadyTimeout, err)
	}
	if acquired != nil {
		acquired()
	}
	return sb, nil
}

// acquire claims a warm sandbox for the spec when the pool has one that
// fits, and creates one cold otherwise; it never waits for the pool.
func (r *Runner) acquire(ctx context.Context, spec drydock.SandboxSpec, log *slog.Logger) (*drydock.Sandbox, string, error) {
	if r.deps.Pool != nil {
		sb, err := r.deps.Pool.Claim(ctx, spec)
		switch {
		case sb != nil:
			return sb, startWarm, nil
		case err != nil && ctx.Err() != nil:
			return nil, "", err
		case err != nil:
			log.Warn("no warm sandbox; starting one cold", "err", err)
		}
	}
	sb, err := r.deps.Runtime.Create(ctx, spec)
	if err != nil {
		return nil, "", fmt.Errorf("create sandbox: %w", err)
	}
	return sb, startCold, nil
}

func (r *Runner) runAgent(ctx context.Context, job *drydock.Job, sb *drydock.Sandbox, emit *emitter) (*drydock.AgentOutcome, error) {
	var history []*drydock.Event
	for after := int64(0); ; {
		page, err := r.deps.Store.ListEvents(ctx, job.ID, after, 1000)
		if err != nil {
			return nil, fmt.Errorf("load event log: %w", err)
		}
		history = append(history, page...)
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].Seq
	}
	prior, err := r.prior(ctx, job)
	if err != nil {
		return nil, err
	}
	run := &drydock.AgentRun{
		Job:     job,
		Sandbox: sb,
		Events:  emit,
		History: history,
		Prior:   prior,
		Progress: func(ctx context.Context, steps int, usage drydock.Usage) error {
			return r.deps.Store.UpdateProgress(ctx, job.ID, r.owner, drydock.JobProgress{Steps: steps, Usage: usage})
		},
		Inbox: r.inbox(job.ID),
		Ask:   r.ask(job.ID),
		Hold:  r.newHolder(job, history, emit.log).Hold,
	}
	return r.deps.Agent.Run(ctx, run)
}

// archive streams the workspace from toolboxd, gzips it on the fly and
// stores it, without holding the archive in memory. The job's secret values
// are masked in every file's contents and name on the way (same length, so
// the tar stays valid).
func (r *Runner) archive(ctx context.Context, job *drydock.Job, sb *drydock.Sandbox) (string, int64, error) {
	tr, err := r.deps.Toolbox(sb).DownloadTar(ctx, ".")
	if err != nil {
		return "", 0, fmt.Errorf("download workspace: %w", err)
	}
	defer tr.Close()
	pr, pw := io.Pipe()
	go func() {
		zw := gzip.NewWriter(pw)
		var err error
		if len(job.Secrets) > 0 {
			err = secretbox.MaskTar(zw, tr, job.Secrets.Values())
		} else {
			_, err = io.Copy(zw, tr)
		}
		if cerr := zw.Close(); err == nil {
			err = cerr
		}
		pw.CloseWithError(err)
	}()
	key := job.ID + ".tar.gz"
	n, err := r.deps.Artifacts.Put(ctx, key, pr)
	pr.CloseWithError(err)
	if err != nil {
		return "", 0, fmt.Errorf("store archive: %w", err)
	}
	return key, n, nil
}

// heartbeat renews the lease until ctx ends; it turns a cancel request or a
// lost lease into the job context's cause.
func (r *Runner) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, id string, log *slog.Logger) {
	t := time.NewTicker(r.cfg.LeaseTTL / 3)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		job, err := r.deps.Store.RenewLease(ctx, id, r.owner, r.cfg.LeaseTTL)
		switch {
		case drydock.ErrorCode(err) == drydock.ELEASELOST:
			cancel(errLeaseLost)
			return
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			// A store hiccup is not fatal until the lease could have expired.
			failures++
			log.Warn("renew lease", "err", err, "failures", failures)
			if failures >= 3 {
				cancel(errLeaseLost)
				return
			}
		default:
			failures = 0
			if job.CancelRequested {
				cancel(errCancelled)
				return
			}
		}
	}
}

// emitter appends agent events to the job's log, with the job's secret
// values masked (the agent masks its events itself; this also covers the
// runner's own and any other agent's).
type emitter struct {
	store drydock.Store
	job   *drydock.Job
	log   *slog.Logger
	// values are maskValues of the job, set once its secrets are open
	// (events before that cannot hold them), so that each event does not
	// derive them again.
	values []string
}

func (e *emitter) Emit(ctx context.Context, typ drydock.EventType, data any) error {
	ev := drydock.NewEvent(e.job.ID, typ, data)
	if len(e.values) > 0 {
		if m := secretbox.MaskString(string(ev.Data), e.values); m != string(ev.Data) {
			ev.Data = []byte(m)
			if !json.Valid(ev.Data) {
				// A value that spans JSON's own syntax: keep nothing.
				ev.Data, _ = json.Marshal(drydock.ErrorEvent{Message: drydock.EventHiddenMessage})
			}
		}
	}
	if err := e.store.AppendEvent(ctx, ev); err != nil {
		e.log.Warn("append event", "type", typ, "err", err)
		return fmt.Errorf("append %s event: %w", typ, err)
	}
	return nil
}

// isolationName says what an isolation means, for the job's log.
func isolationName(isolation string) string {
	switch isolation {
	case drydock.IsolationGVisor:
		return "gVisor (a kernel in user space between it and the host's)"
	case drydock.IsolationRunc:
		return "runc (namespaces, seccomp and no capabilities on the host's kernel)"
	case drydock.IsolationNone:
		return "no isolation (processes on the server's host: the local runtime)"
	case "":
		return "an isolation the runtime does not report"
	}
	return "the RuntimeClass " + isolation
}
