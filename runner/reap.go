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
// of this node left (this process's pool keeps its own). Sandboxes of
// running jobs stay, whichever replica runs them, so a recovering replica
// can reattach.
//
// Sandboxes labelled with another node id are destroyed only when their job
// is in this server's store and ended more than OrphanGrace ago: that node
// would have torn them down itself, so it is gone (a Kubernetes replica
// replaced under a new pod name, a server restarted on another port).
// Unknown jobs of other nodes stay, so that servers with different stores
// sharing one engine never reap each other's sandboxes, and so do other
// nodes' warm sandboxes, which their pools own.
func (r *Runner) Reap(ctx context.Context) (int, error) {
	sbs, err := r.deps.Runtime.List(ctx, map[string]string{drydock.LabelManaged: "true"})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, sb := range sbs {
		why := r.reapable(ctx, sb)
		if why == "" {
			continue
		}
		if err := r.deps.Runtime.Destroy(ctx, sb.ID); err != nil {
			r.log.Warn("reaper: destroy sandbox", "sandbox_id", sb.ID, "job_id", sb.Labels[drydock.LabelJob], "err", err)
			continue
		}
		r.log.Info("reaped a sandbox: "+why, "sandbox_id", sb.ID, "job_id", sb.Labels[drydock.LabelJob], "server", sb.Labels[drydock.LabelServer])
		n++
	}
	return n, nil
}

// reapable says why sb is to be destroyed, or "" to keep it.
func (r *Runner) reapable(ctx context.Context, sb *drydock.Sandbox) string {
	own := sb.Labels[drydock.LabelServer] == r.cfg.NodeID
	if owner, warm := pool.Unclaimed(sb); warm {
		// The pool running here owns its warm sandboxes, other nodes'
		// pools theirs; those of a previous process of this node are
		// nobody's.
		if !own || (r.deps.Pool != nil && owner == r.deps.Pool.Owner()) {
			return ""
		}
		return "a warm sandbox left by a previous process"
	}
	// A claimed warm sandbox reports its job like any other.
	jobID := sb.Labels[drydock.LabelJob]
	job, err := r.deps.Store.GetJob(ctx, jobID)
	switch {
	case err != nil && drydock.ErrorCode(err) != drydock.ENOTFOUND:
		r.log.Warn("reaper: look up job", "job_id", jobID, "err", err)
		return ""
	case err != nil && own:
		return "its job is unknown"
	case err != nil:
		return "" // another store's job, on a shared engine
	case !job.Status.Terminal():
		return ""
	case own:
		return "its job is finished"
	case job.FinishedAt != nil && time.Since(*job.FinishedAt) >= r.cfg.OrphanGrace:
		return "its job finished and its server is gone"
	}
	return ""
}

// stateDirPruner is a runtime that keeps host-side state per sandbox (the
// Docker runtime's state directories), which a container removed behind its
// back leaves; the reaper's round sweeps it.
type stateDirPruner interface {
	PruneStateDirs(ctx context.Context) (int, error)
}

// reapLoop runs Reap at start and then every interval until ctx ends.
func (r *Runner) reapLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.ReapInterval)
	defer t.Stop()
	for {
		if _, err := r.Reap(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("reaper pass failed", "err", err)
		}
		if p, ok := r.deps.Runtime.(stateDirPruner); ok {
			if _, err := p.PruneStateDirs(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("prune orphan sandbox state", "err", err)
			}
		}
		// Secrets kept for follow-ups go once the window has passed (any
		// replica may erase them).
		if n, err := r.deps.Store.EraseSecretsFinishedBefore(ctx, time.Now().Add(-r.cfg.FollowUpSecrets)); err != nil && ctx.Err() == nil {
			r.log.Warn("erase the secrets finished jobs kept for follow-ups", "err", err)
		} else if n > 0 {
			r.log.Info("erased the secrets finished jobs kept for follow-ups", "count", n)
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
