package toolbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"

	"github.com/drydockhq/drydock"
)

// ClaimRequest is the body of POST /v1/claim, which hands a warm sandbox to
// a job: toolboxd checks that its workspace is empty and that no shell runs,
// then replaces its token (and the desktop's VNC password) with these. The
// caller authenticates with the old token, which stops working at once.
type ClaimRequest struct {
	Token       string `json:"token"`
	VNCPassword string `json:"vnc_password,omitempty"`
}

// BootSecrets is the file named by TOOLBOXD_SECRETS_FILE, through which the
// runtimes hand toolboxd its first token and VNC password; toolboxd removes
// it at start. Same fields as a claim.
type BootSecrets = ClaimRequest

// Claim installs new secrets in the toolboxd this client talks to. The
// client keeps the old token: callers make a new client with the new one.
// A retry of a claim that took effect is refused with the old token, so a
// failed Claim may still have succeeded: check with the new token.
func (c *Client) Claim(ctx context.Context, req ClaimRequest) error {
	return c.doJSON(ctx, http.MethodPost, "/v1/claim", nil, req, nil)
}

// ClaimOnce is the host side of a claim for runtimes that keep a directory
// per sandbox. It first creates marker exclusively, holding jobID, so that
// a sandbox is claimed once even by two processes (a second claim fails
// with ECONFLICT), then claims the toolboxd at ep with the old token on a
// client of its own. When the answer is lost (the claim may have taken
// effect, and a retry with the old token is refused), it asks toolboxd
// with the new token whether it did.
func ClaimOnce(ctx context.Context, marker, jobID string, ep drydock.Endpoint, oldToken string, req ClaimRequest) error {
	if jobID == "" {
		return drydock.Errorf(drydock.EINVALID, "claim needs a job id")
	}
	f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return drydock.Errorf(drydock.ECONFLICT, "the sandbox was claimed already")
	}
	if err != nil {
		return fmt.Errorf("mark claim: %w", err)
	}
	_, err = f.WriteString(jobID + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("mark claim: %w", err)
	}
	c := New(ep, oldToken)
	defer c.Close()
	err = c.Claim(ctx, req)
	if err == nil || drydock.ErrorCode(err) != drydock.EUNAUTHORIZED && drydock.ErrorCode(err) != drydock.EUNAVAILABLE {
		return err
	}
	nc := New(ep, req.Token)
	defer nc.Close()
	if _, ierr := nc.Info(ctx); ierr == nil {
		return nil
	}
	return err
}
