package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/secretbox"
)

// maxMessagesBody bounds a body of POST /v1/jobs/{id}/messages. A message
// to a finished job is a follow-up, which may carry a whole job's fields
// (a task-sized text and overrides), so the limit is a job's, not a
// message's; a message's own text is checked against MaxMessageBytes.
const maxMessagesBody = 1 << 20

// MessageRequest is the body of POST /v1/jobs/{id}/messages to a pending or
// running job.
type MessageRequest struct {
	Text *string `json:"text"`
}

var messageBody = bodyHelp{fields: "text", example: `{"text": "use Postgres, not SQLite"}`}

// handleMessages sends a message to a job's agent. On a
// pending or running job the message is stored as a user_message event at
// once (the durable record, shown by the event stream) and answered 202
// with that event; the agent reads it before its next model call. A
// finished job's message is a follow-up (followUp).
func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	job, err := s.lookup(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	data, err := s.readMessageBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if job.NoAgent() {
		// Nobody would read it, and a follow-up would be another held
		// sandbox whose task is ignored.
		s.writeError(w, r, drydock.Errorf(drydock.ECONFLICT, "job %s has no agent (agent %q) to read a message; run commands in its sandbox instead (POST /v1/jobs/%s/commands)", job.ID, drydock.AgentNone, job.ID))
		return
	}
	if job.Status.Terminal() {
		s.followUp(w, r, job, data)
		return
	}
	var req MessageRequest
	if err := decodeJSONBytes(data, &req, messageBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Text == nil {
		s.writeError(w, r, drydock.Errorf(drydock.EINVALID, `text is required, as in %s`, messageBody.example))
		return
	}
	if err := drydock.ValidateMessageText(*req.Text); err != nil {
		s.writeError(w, r, err)
		return
	}
	// A secret pasted into a message is masked before it is stored, as it
	// is everywhere else the job's output goes; a server that cannot open
	// the job's secrets cannot mask, so it stores nothing.
	values, err := s.secretValues(job)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	text := secretbox.MaskString(*req.Text, values)
	p := principalFrom(r.Context())
	ev := drydock.NewEvent(job.ID, drydock.EventUserMessage, drydock.UserMessage{Text: text, From: p.Name})
	err = s.store.AppendMessage(r.Context(), ev)
	if drydock.ErrorCode(err) == drydock.ECONFLICT {
		// The job finished since it was read: the message is a follow-up.
		if job, err = s.store.GetJob(r.Context(), job.ID); err != nil {
			s.writeError(w, r, err)
			return
		}
		s.followUp(w, r, job, data)
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.Info("message to agent", "job_id", job.ID, "seq", ev.Seq, "bytes", len(text), "by", p.ID)
	writeJSON(w, http.StatusAccepted, ev)
}

// readMessageBody reads the body of POST /v1/jobs/{id}/messages whole,
// checking its size; its fields are decoded by the branch that
// knows the job's state.
func (s *Server) readMessageBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	// The route's Content-Type is checked in front of it (checkBody).
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxMessagesBody))
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		return nil, drydock.Errorf(drydock.ETOOLARGE, "request body is larger than %d bytes", maxErr.Limit)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", drydock.Errorf(drydock.EINVALID, "the request body could not be read"), err)
	case len(bytes.TrimSpace(data)) == 0:
		return nil, drydock.Errorf(drydock.EINVALID, "request body is empty; send a JSON object such as %s", messageBody.example)
	}
	return data, nil
}
