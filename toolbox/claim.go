package toolbox

import (
	"context"
	"net/http"
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
// failed Claim may still have succeeded: check with the new token
// (hostclient.ClaimOnce does).
func (c *Client) Claim(ctx context.Context, req ClaimRequest) error {
	return c.doJSON(ctx, http.MethodPost, "/v1/claim", nil, req, nil)
}
