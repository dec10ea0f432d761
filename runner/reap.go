package runner

import (
	"context"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/pool"
)

// Reap destroys this server's sandboxes whose job is finished or unknown:
// those a crash left between archiving and teardown, or whose job was
// deleted, and the warm sandboxes no job claimed that a previous process
// of this node left (this process's pool keeps its own). Sandboxes of running jobs stay, whichever replica runs them, so a
// recovering replica can reattach. Only sandboxes labelled with this node id
// are considered, so that servers with different stores sharing one engine
// never reap each other's sandboxes.
func (r *Runner) Reap(ctx context.Context) (int, error) {
	sbs, err := r.deps.Runtime.List(ctx, map[string]string{
		drydock.LabelManaged: "true",
		drydock.LabelServer:  r.cfg.NodeID,
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, sb := range sbs {
		if owner, warm := pool.Unclaimed(sb); warm {
			// The pool running here owns its warm sandboxes; those of a
			// previous process of this node are nobody's.
			if r.deps.Pool != nil && owner == r.deps.Pool.Owner() {
				continue
			}
			if err := r.deps.Runtime.Destroy(ctx, sb.ID); err != nil {
				r.log.Warn("reaper: destroy stale warm sandbox", "sandbox_id", sb.ID, "err", err)
				continue
			}
			r.log.Info("reaped a warm sandbox left by a previous process", "sandbox_id", sb.ID)
			n++
			continue
		}
		// A claimed warm sandbox reports its job like any other.
		jobID := sb.Labels[drydock.LabelJob]
		job, err := r.deps.Store.GetJob(ctx, jobID)
		switch {
		case err == nil && !job.Status.Terminal():
			continue
		case err != nil && drydock.ErrorCode(err) != drydock.ENOTFOUND:
			r.log.Warn("reaper: look up job", "job_id", jobID, "err", err)
			continue
		}
		if err := r.deps.Runtime.Destroy(ctx, sb.ID); err != nil {
			r.log.Warn("reaper: destroy sandbox", "sandbox_id", sb.ID, "job_id", jobID, "err", err)
			continue
		}
		r.log.Info("reaped sandbox of a finished or unknown job", "sandbox_id", sb.ID, "job_id", jobID)
		n++
	}
	return n, nil
}

// reapLoop runs Reap at start and then every interval until ctx ends.
func (r *Runner) reapLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.ReapInterval)
	defer t.Stop()
	for {
		if _, err := r.Reap(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("reaper pass failed", "err", err)
		}
		// The store's expired idempotency keys go on the same round (any
		// replica may purge them; a purge skips what another one holds).
		if n, err := r.deps.Store.PurgeIdempotencyKeys(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("purge expired idempotency keys", "err", err)
		} else if n > 0 {
			r.log.Info("purged expired idempotency keys", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
