package client

import (
	"bufio"
	"bytes"
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
	br := bufio.NewReader(resp.Body)
	if !isJSON(resp) {
		// Labelled otherwise, but a JSON object all the same is taken;
		// a page is described, not handed over.
		head, _ := br.Peek(512)
		if t := bytes.TrimSpace(head); len(t) == 0 || t[0] != '{' {
			defer resp.Body.Close()
			b, _ := io.ReadAll(io.LimitReader(br, maxErrorBody))
			return nil, c.foreign(resp, b)
		}
	}
	return struct {
		io.Reader
		io.Closer
	}{br, resp.Body}, nil
}
