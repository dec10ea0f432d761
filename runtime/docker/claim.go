package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
	"github.com/drydockhq/drydock/toolbox/hostclient"
)

// claimFile marks a sandbox handed to a job. It is created exclusively, so a
// sandbox is claimed once even by two runtimes sharing StateDir.
const claimFile = "claimed"

// Claim hands the warm sandbox id to job jobID. toolboxd checks that the
// workspace is empty and replaces its token and VNC password with fresh
// ones (the old ones stop working); the new secrets and the job go to the
// secrets file, so Get and List return them, with the drydock.job label
// naming the job, from then on and after an orchestrator restart. A
// container's labels cannot change after create, which is why the claim
// lives on the host. A second claim fails with ECONFLICT.
func (r *Runtime) Claim(ctx context.Context, id, jobID string) (*drydock.Sandbox, error) {
	sb, err := r.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if sb.State != drydock.SandboxRunning {
		return nil, drydock.Errorf(drydock.EUNAVAILABLE, "sandbox %s is %s, not running", id, sb.State)
	}
	if sb.Token == "" {
		return nil, drydock.Errorf(drydock.EUNAVAILABLE, "sandbox %s has no readable secrets", id)
	}
	dir := r.sandboxDir(id, sb.Labels)
	sec := secrets{Token: drydock.NewSandboxToken(), VNCPassword: drydock.NewVNCPassword(), Job: jobID}
	req := toolbox.ClaimRequest{Token: sec.Token, VNCPassword: sec.VNCPassword}
	if err := hostclient.ClaimOnce(ctx, filepath.Join(dir, claimFile), jobID, sb.Endpoint, sb.Token, req); err != nil {
		return nil, fmt.Errorf("claim sandbox %s: %w", id, err)
	}
	if err := writeSecrets(dir, sec); err != nil {
		return nil, fmt.Errorf("claim sandbox %s: %w", id, err)
	}
	sb.Token, sb.VNCPassword = sec.Token, sec.VNCPassword
	sb.Labels[drydock.LabelJob] = jobID
	r.log.Info("sandbox claimed", "sandbox", id, "job", jobID)
	return sb, nil
}

// writeSecrets replaces the secrets file atomically (0600), so a reader
// sees the old secrets or the new, never a torn file.
func writeSecrets(dir string, sec secrets) error {
	data, err := json.Marshal(sec)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "secrets.json.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write secrets: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "secrets.json")); err != nil {
		return fmt.Errorf("write secrets: %w", err)
	}
	return nil
}

// ImageID resolves an image reference to the id of the image it names now,
// so that a warm pool notices when a tag moves to a new build.
func (r *Runtime) ImageID(ctx context.Context, ref string) (string, error) {
	res, err := r.cli.ImageInspect(ctx, ref)
	if err != nil {
		return "", engineError(fmt.Sprintf("inspect image %s", ref), err)
	}
	return res.ID, nil
}
