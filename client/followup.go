package client

import (
	"context"
	"net/http"

	"github.com/drydockhq/drydock"
)

// FollowUpRequest is a follow-up of a finished job: the message, which
// becomes the new job's task, and the fields it overrides. A field left
// zero (nil) is inherited from the parent (model, profile, egress,
// context_budget, metadata) or takes the server's default (max_steps,
// timeout).
type FollowUpRequest struct {
	Text          string
	Model         string
	MaxSteps      int
	Timeout       drydock.Duration
	Profile       drydock.Profile
	ContextBudget int
	// Metadata replaces the parent's; non-nil and empty clears it.
	Metadata map[string]string
	// Egress replaces the parent's list; non-nil and empty is none.
	Egress []string
	// Secrets replace the parent's set; nil inherits it while the server
	// keeps a finished job's secrets (its --follow-up-secrets window),
	// after which a follow-up of a job with secrets must give them again,
	// or a non-nil empty map to go on without.
	Secrets drydock.SecretValues
	// Agent drydock.AgentNone holds the parent's finished workspace in a
	// fresh sandbox for the caller (RunCommand, WriteFile) instead of
	// giving it to an agent; "" is the server's agent.
	Agent string
}

func (r FollowUpRequest) body() map[string]any {
	b := map[string]any{"text": r.Text}
	if r.Model != "" {
		b["model"] = r.Model
	}
	if r.MaxSteps != 0 {
		b["max_steps"] = r.MaxSteps
	}
	if r.Timeout != 0 {
		b["timeout"] = r.Timeout
	}
	if r.Profile != "" {
		b["profile"] = r.Profile
	}
	if r.ContextBudget != 0 {
		b["context_budget"] = r.ContextBudget
	}
	if r.Metadata != nil {
		b["metadata"] = r.Metadata
	}
	if r.Egress != nil {
		b["egress"] = r.Egress
	}
	if r.Secrets != nil {
		b["secrets"] = r.Secrets
	}
	if r.Agent != "" {
		b["agent"] = r.Agent
	}
	return b
}

// FollowUp creates a job that continues the finished job id: its
// workspace starts as id's archived workspace and its agent from the
// conversation so far, followed by req.Text. It returns the new job
// (pending, with ParentJobID). Like Schedule it sends an Idempotency-Key
// and sends the request again when the answer was lost, so a retry never
// creates a second follow-up; an outcome that stays unknown is a
// *ScheduleError naming the key. A job that has not finished, or has no
// archived workspace, is ECONFLICT.
func (c *Client) FollowUp(ctx context.Context, id string, req FollowUpRequest, opts ...ScheduleOption) (*drydock.Job, error) {
	p, err := jobPath(id, "/messages")
	if err != nil {
		return nil, err
	}
	var o scheduleOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.key == "" {
		o.key = NewIdempotencyKey()
	} else if err := drydock.CheckIdempotencyKey(o.key); err != nil {
		return nil, err
	}
	// The route takes messages for a running job's agent as well: ask
	// first, so that a follow-up of a job that has not finished is refused
	// rather than delivered to its agent. A job that finishes after this
	// read is refused too, which is safe; a finished job stays finished.
	parent, err := c.Job(ctx, id)
	if err != nil {
		return nil, err
	}
	if !parent.Status.Terminal() {
		return nil, drydock.Errorf(drydock.ECONFLICT, "job %s is %s: a follow-up continues a finished job (send a message to steer a running one)", id, parent.Status)
	}
	hdr := http.Header{"Idempotency-Key": {sfString(o.key)}}
	body := req.body()
	return c.createRetrying(ctx, o.key, func() (*drydock.Job, bool, error) {
		resp, err := c.send(ctx, http.MethodPost, p, nil, body, hdr)
		return c.createdJob(ctx, p, resp, err)
	})
}
