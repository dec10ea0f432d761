package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drydockhq/drydock"
)

// holdForCaller is the run of a job scheduled with agent "none":
// its sandbox, prepared like any job's, is the caller's until the job's
// context ends (its timeout or a cancel); the caller runs commands and
// writes files in it through the API. The archive, diff and teardown that
// follow are any job's.
func (r *Runner) holdForCaller(ctx context.Context, job *drydock.Job, sb *drydock.Sandbox, emit *emitter) error {
	deadline, _ := ctx.Deadline()
	emit.Emit(ctx, drydock.EventLog, drydock.LogEvent{Level: "info", Kind: drydock.LogSandboxHeld, SandboxID: sb.ID,
		Message: fmt.Sprintf("sandbox %s is ready and held for you (agent %q) until %s or a cancel; run commands and write files in it through the API or MCP", sb.ID, drydock.AgentNone, deadline.UTC().Format(time.RFC3339))})
	<-ctx.Done()
	return nil
}

// heldResult turns the end of a held sandbox into the job's result: its
// timeout is how such a job normally ends (complete, not an error); a
// cancel stays a cancel.
func heldResult(job *drydock.Job, cause error, timeout time.Duration) (drydock.JobResult, bool) {
	if !job.NoAgent() || !errors.Is(cause, errTimeout) {
		return drydock.JobResult{}, false
	}
	return drydock.JobResult{Status: drydock.StatusComplete,
		Summary: fmt.Sprintf("The sandbox was held for its caller until the job's timeout (%s).", timeout)}, true
}
