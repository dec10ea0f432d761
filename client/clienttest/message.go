package clienttest

import (
	"encoding/json"
	"net/http"

	"github.com/drydockhq/drydock"
)

// message is POST /v1/jobs/{id}/messages: the text is checked with the
// domain's rule and stored as a user_message event of a live job, as the
// real server does; a finished job's message is refused (409) as by a
// server without follow-ups.
func (s *Server) message(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Text *string `json:"text"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Text == nil {
		writeError(w, drydock.Errorf(drydock.EINVALID, `want {"text": "..."}`))
		return
	}
	if err := drydock.ValidateMessageText(*req.Text); err != nil {
		writeError(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.lookup(w, r)
	if !ok {
		return
	}
	if j.Status.Terminal() {
		writeError(w, drydock.Errorf(drydock.ECONFLICT, "job %s is %s: follow-ups of finished jobs are not available yet", j.ID, j.Status))
		return
	}
	writeJSON(w, http.StatusAccepted, s.emitLocked(j.ID, drydock.EventUserMessage, drydock.UserMessage{Text: *req.Text}))
}

// Messages returns the texts of a job's user_message events, in order.
func (s *Server) Messages(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.events[id] {
		var m drydock.UserMessage
		if e.Type == drydock.EventUserMessage && json.Unmarshal(e.Data, &m) == nil {
			out = append(out, m.Text)
		}
	}
	return out
}

// SetWaitingFor shows a question an interactive job's agent waits on.
func (s *Server) SetWaitingFor(id, question string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mustJob(id).WaitingFor = question
	s.bump()
}
