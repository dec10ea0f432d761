package client

import (
	"context"
	"net/http"

	"github.com/drydockhq/drydock"
)

// SendMessage sends text to the agent of a pending or running job (POST
// /v1/jobs/{id}/messages) and returns the stored user_message event; the
// agent reads it before its next model call. Text is checked first with
// drydock.ValidateMessageText, so a message the server would refuse is
// refused without a request.
func (c *Client) SendMessage(ctx context.Context, id, text string) (*drydock.Event, error) {
	p, err := jobPath(id, "/messages")
	if err != nil {
		return nil, err
	}
	if err := drydock.ValidateMessageText(text); err != nil {
		return nil, err
	}
	var ev drydock.Event
	if err := c.doJSON(ctx, http.MethodPost, p, nil, map[string]string{"text": text}, &ev); err != nil {
		return nil, err
	}
	return &ev, nil
}
