package client

import (
	"context"
	"io"
	"net/http"
)

// Trajectory returns the JSON document of GET /v1/jobs/{id}/trajectory (the
// job and its whole event log, the format of package api's Trajectory) as a
// stream the caller reads and closes. A trajectory can be large, so it is
// not decoded here.
func (c *Client) Trajectory(ctx context.Context, id string) (io.ReadCloser, error) {
	p, err := jobPath(id, "/trajectory")
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, http.MethodGet, p, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	body, err := c.jsonBody(resp)
	if err != nil {
		resp.Body.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{body, resp.Body}, nil
}
