package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/drydockhq/drydock"
)

// MessageResult is what a message did: to a pending or running job it was
// stored for the agent (Event, the user_message); to a finished job it
// started a follow-up (FollowUp, the new job).
type MessageResult struct {
	Event    *drydock.Event
	FollowUp *drydock.Job
}

// SendMessage sends text to job id (POST /v1/jobs/{id}/messages). The
// agent of a pending or running job reads it before its next model call;
// a finished job is continued by a follow-up job with the text as its
// task (use FollowUp to override fields or retry safely). Text is checked
// first with drydock.ValidateMessageText, so a message the server would
// refuse is refused without a request.
func (c *Client) SendMessage(ctx context.Context, id, text string) (*MessageResult, error) {
	p, err := jobPath(id, "/messages")
	if err != nil {
		return nil, err
	}
	if err := drydock.ValidateMessageText(text); err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, http.MethodPost, p, nil, map[string]string{"text": text}, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	rd, err := c.jsonBody(resp)
	if err != nil {
		return nil, err
	}
	var res MessageResult
	var out any = &res.Event
	if resp.StatusCode == http.StatusCreated {
		out = &res.FollowUp
	}
	if err := json.NewDecoder(rd).Decode(out); err != nil {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return nil, fmt.Errorf("read the answer of POST %s: %w", p, err)
	}
	if res.Event == nil && res.FollowUp == nil {
		return nil, fmt.Errorf("POST %s answered %d with no message and no job", p, resp.StatusCode)
	}
	return &res, nil
}
