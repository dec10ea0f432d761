package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/secretbox"
	"github.com/drydockhq/drydock/toolbox"
)

// differ is what a Toolbox offers when it can record a workspace's starting
// point and diff against it (toolbox.Client does); without it a job simply
// has no diff.
type differ interface {
	Baseline(ctx context.Context) (string, error)
	DiffWith(ctx context.Context, opts toolbox.DiffOptions) (*toolbox.DiffResult, error)
}

// baseline records the workspace as the job's starting point, right before
// the agent first runs: after anything that seeds the workspace, so the
// diff shows the agent's work only. A failure costs the job its diff, not
// its run; a recovered job keeps the baseline its sandbox already has.
func (r *Runner) baseline(ctx context.Context, job *drydock.Job, sb *drydock.Sandbox, emit *emitter, log *slog.Logger) {
	d, ok := r.deps.Toolbox(sb).(differ)
	if !ok {
		return
	}
	commit, err := d.Baseline(ctx)
	if err != nil {
		log.Warn("record the workspace's starting point; the job will have no diff", "err", mask(job, err.Error()))
		emit.Emit(ctx, drydock.EventLog, drydock.LogEvent{Level: "warn", Message: "recording the workspace's starting point failed, so the job will have no diff: " + drydock.ErrorMessage(err)})
		return
	}
	// The commit goes into the job's log, outside the sandbox, so that the
	// final diff can check that the sandbox's copy is still that commit.
	if err := emit.Emit(ctx, drydock.EventLog, drydock.LogEvent{Level: "info", Kind: drydock.LogDiffBaseline, Commit: commit,
		Message: "the workspace's starting point for the diff is recorded (commit " + commit + ")"}); err != nil {
		log.Warn("record the baseline's commit", "err", err)
	}
	log.Info("workspace baseline recorded", "commit", commit)
}

// storeDiff stores the workspace's diff against its baseline beside the
// archive, so it outlives the sandbox. Values of the job's secrets are
// masked; binary patches are left out when the job has secrets, since no
// mask finds a value in their encoding.
func (r *Runner) storeDiff(ctx context.Context, job *drydock.Job, sb *drydock.Sandbox, emit *emitter) error {
	d, ok := r.deps.Toolbox(sb).(differ)
	if !ok {
		return nil
	}
	var maskFn func(string) string
	if len(job.Secrets) > 0 {
		vals := maskValues(job)
		maskFn = func(s string) string { return secretbox.MaskString(s, vals) }
	}
	// The diff is checked against the commit recorded when the job
	// started, once nothing of the agent's runs to change it meanwhile.
	base, err := r.loggedCommit(ctx, job.ID, drydock.LogDiffBaseline)
	if err != nil {
		return err
	}
	verify := base != ""
	if err := r.quiesce(ctx, sb); err != nil {
		// Checked while the agent's processes run, the check proves
		// nothing: the diff is made as for a live job, and the log says so.
		r.log.Warn("the diff's starting point is not checked", "job_id", job.ID, "err", err)
		emit.Emit(ctx, drydock.EventLog, drydock.LogEvent{Level: "warn",
			Message: "the diff is stored without checking its starting point: " + drydock.ErrorMessage(err)})
		verify = false
	}
	res, err := d.DiffWith(ctx, toolbox.DiffOptions{Binary: len(job.Secrets) == 0, Mask: maskFn, Base: base, Verify: verify})
	if errors.Is(err, toolbox.ErrNoBaseline) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := r.deps.Artifacts.Put(ctx, drydock.DiffArtifactKey(job.ID), bytes.NewReader(res.Patch)); err != nil {
		return fmt.Errorf("store diff: %w", err)
	}
	return nil
}
