package client

import (
	"context"
	"net/http"

	"github.com/drydockhq/drydock"
)

// Pause pauses a pending or running job: its agent makes no model call
// and runs no tool until Resume. Pausing a paused job returns it unchanged;
// a finished job is an ECONFLICT error.
func (c *Client) Pause(ctx context.Context, id string) (*drydock.Job, error) {
	return c.pauseOp(ctx, id, "/pause")
}

// Resume lifts a person's pause. The job stays paused while someone holds
// control of its desktop (Job.ControlBy).
func (c *Client) Resume(ctx context.Context, id string) (*drydock.Job, error) {
	return c.pauseOp(ctx, id, "/resume")
}

func (c *Client) pauseOp(ctx context.Context, id, op string) (*drydock.Job, error) {
	p, err := jobPath(id, op)
	if err != nil {
		return nil, err
	}
	var j drydock.Job
	if err := c.doJSON(ctx, http.MethodPost, p, nil, nil, &j); err != nil {
		return nil, err
	}
	return &j, nil
}
