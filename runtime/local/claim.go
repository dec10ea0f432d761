package local

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
	"github.com/drydockhq/drydock/toolbox/hostclient"
)

// claimFile marks a sandbox handed to a job; it is created exclusively, so
// a sandbox is claimed once even by two runtimes over the same root.
const claimFile = "claimed"

// Claim hands the warm sandbox id to job jobID: toolboxd checks that the
// workspace is empty and replaces its token, the new token is kept, and
// the sandbox's drydock.job label names the job from then on. A second
// claim of the same sandbox fails with ECONFLICT.
func (r *Runtime) Claim(ctx context.Context, id, jobID string) (*drydock.Sandbox, error) {
	sb, err := r.Get(ctx, id) // serves it again if nothing does
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(r.root, id)
	token := drydock.NewSandboxToken()
	if err := hostclient.ClaimOnce(ctx, filepath.Join(dir, claimFile), jobID, sb.Endpoint, sb.Token, toolbox.ClaimRequest{Token: token}); err != nil {
		return nil, fmt.Errorf("claim sandbox %s: %w", id, err)
	}
	// The token first: toolboxd already answers to it alone.
	if err := writeFileAtomic(filepath.Join(dir, tokenFile), []byte(token+"\n")); err != nil {
		return nil, fmt.Errorf("claim sandbox %s: keep token: %w", id, err)
	}
	m, _, err := r.load(id)
	if err != nil {
		return nil, err
	}
	m.JobID = jobID
	m.Labels[drydock.LabelJob] = jobID
	if err := r.writeMeta(dir, m); err != nil {
		return nil, fmt.Errorf("claim sandbox %s: %w", id, err)
	}
	r.log.Info("sandbox claimed", "sandbox", id, "job", jobID)
	return r.sandbox(m, token, drydock.SandboxRunning), nil
}
