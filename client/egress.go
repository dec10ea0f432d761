package client

import (
	"context"
	"net/http"

	"github.com/drydockhq/drydock"
)

// SetEgress replaces the egress allowlist of a pending or running job with
// list (host[:port], "*.domain", an address or a CIDR each; an empty list
// denies everything) and returns the job. The sandbox's new connections
// follow it at once; open ones to destinations it drops are closed. A
// finished job's list cannot change (ECONFLICT).
func (c *Client) SetEgress(ctx context.Context, id string, list []string) (*drydock.Job, error) {
	p, err := jobPath(id, "/egress")
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []string{} // null would be refused as a missing list
	}
	var j drydock.Job
	if err := c.doJSON(ctx, http.MethodPut, p, nil, map[string]any{"egress": list}, &j); err != nil {
		return nil, err
	}
	return &j, nil
}
