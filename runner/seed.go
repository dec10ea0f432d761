package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/drydockhq/drydock"
)

// seedSource marks the log event that records a seeded workspace, so that
// a recovered job is not seeded twice: unpacking the upload again would
// put back files the agent has changed or deleted since.
const seedSource = "upload"

// dropInput deletes a finished job's input archive (an upload, or the copy
// of a follow-up's parent archive): the workspace it seeded is archived
// with the job, and a finished job never runs again, so it would only fill
// the artifact store. A failure leaves it for an operator; it is logged.
func (r *Runner) dropInput(ctx context.Context, job *drydock.Job, log *slog.Logger) {
	if job.InputKey == "" {
		return
	}
	if err := r.deps.Artifacts.Delete(ctx, job.InputKey); err != nil && drydock.ErrorCode(err) != drydock.ENOTFOUND {
		log.Warn("delete the finished job's input archive", "key", job.InputKey, "err", err)
	}
}

// seedWorkspace unpacks the job's uploaded archive (Job.InputKey, stored
// normalized by the API) into the sandbox's workspace through toolboxd,
// which confines every entry to /workspace, before the agent starts. It
// runs the same whatever the runtime or a warm sandbox. A reattached job
// whose log records the seeding is left as it is; one whose server
// stopped before that record (the agent had not started) is seeded again,
// which rewrites the same files.
func (r *Runner) seedWorkspace(ctx context.Context, job *drydock.Job, sb *drydock.Sandbox, reattach bool, emit *emitter, log *slog.Logger) error {
	if job.InputKey == "" {
		return nil
	}
	if reattach {
		done, err := r.seeded(ctx, job.ID)
		if err != nil {
			return err
		}
		if done {
			log.Info("workspace already seeded; not unpacking the upload again")
			return nil
		}
	}
	rc, err := r.deps.Artifacts.Get(ctx, job.InputKey)
	if drydock.ErrorCode(err) == drydock.ENOTFOUND {
		return drydock.Errorf(drydock.EUNAVAILABLE, "the job's uploaded workspace %s is no longer in the artifact store; the job cannot start", job.InputKey)
	}
	if err != nil {
		return fmt.Errorf("open the uploaded workspace: %w", err)
	}
	defer rc.Close()
	res, err := r.deps.Toolbox(sb).UploadTar(ctx, ".", rc)
	if err != nil {
		return fmt.Errorf("unpack the uploaded workspace into the sandbox: %w", err)
	}
	log.Info("workspace seeded from the upload", "files", res.Files, "dirs", res.Dirs, "links", res.Links, "bytes", res.Bytes)
	from := "the uploaded archive"
	if job.ParentJobID != "" {
		from = "the archive of job " + job.ParentJobID + ", which this job follows up"
	}
	// Without this record a recovery would unpack again over the agent's
	// work, so a failure to write it fails the job before the agent runs.
	return emit.Emit(ctx, drydock.EventLog, drydock.LogEvent{
		Level: "info", Seed: seedSource,
		Files: res.Files, Dirs: res.Dirs, Links: res.Links, Bytes: res.Bytes,
		Message: fmt.Sprintf("workspace seeded from %s: %d files, %d directories, %d links, %d bytes", from, res.Files, res.Dirs, res.Links, res.Bytes),
	})
}

// seeded reports whether the job's log records its seeding.
func (r *Runner) seeded(ctx context.Context, jobID string) (bool, error) {
	for after := int64(0); ; {
		page, err := r.deps.Store.ListEvents(ctx, jobID, after, 1000)
		if err != nil {
			return false, fmt.Errorf("load event log: %w", err)
		}
		for _, e := range page {
			if e.Type != drydock.EventLog {
				continue
			}
			var d drydock.LogEvent
			if json.Unmarshal(e.Data, &d) == nil && d.Seed == seedSource {
				return true, nil
			}
		}
		if len(page) < 1000 {
			return false, nil
		}
		after = page[len(page)-1].Seq
	}
}
