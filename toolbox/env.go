package toolbox

import (
	"context"
	"net/http"
)

// EnvRequest is the body of PUT /v1/env: variables added to the
// environment of every process toolboxd starts from then on (shell
// sessions, exec, the Python kernel, node), on top of its own. They
// replace the variables of an earlier PUT. toolboxd keeps them in memory
// only: not in a file, not in its own environment. Shells that already
// run keep the environment they started with.
type EnvRequest struct {
	Env map[string]string `json:"env"`
}

// EnvResult is the answer to PUT /v1/env: the names now set, sorted (never
// the values), and whether the Python kernel was restarted to take them
// (it is when they changed; its variables are lost then).
type EnvResult struct {
	Names           []string `json:"names"`
	KernelRestarted bool     `json:"kernel_restarted,omitempty"`
}

// SetEnv replaces the extra environment of the sandbox's processes (see
// EnvRequest). Setting the same variables again changes nothing, so a
// caller that reattaches to a sandbox may repeat it.
func (c *Client) SetEnv(ctx context.Context, env map[string]string) (*EnvResult, error) {
	var res EnvResult
	if err := c.doJSON(ctx, http.MethodPut, "/v1/env", nil, EnvRequest{Env: env}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
