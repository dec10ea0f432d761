package runner

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/drydockhq/drydock"
)

// attachEgress opens the sandbox's way out for the job (Deps.Egress), for a
// new, a warm or a reattached sandbox alike, and returns what closes it.
func (r *Runner) attachEgress(ctx context.Context, job *drydock.Job, sb *drydock.Sandbox, log *slog.Logger) (func(), error) {
	if r.deps.Egress == nil {
		return func() {}, nil
	}
	c, err := r.deps.Egress(ctx, job, sb)
	if err != nil {
		return nil, fmt.Errorf("open the sandbox's egress proxy: %w", err)
	}
	return func() {
		if err := c.Close(); err != nil {
			log.Warn("close egress proxy", "sandbox_id", sb.ID, "err", err)
		}
	}, nil
}
