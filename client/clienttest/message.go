package clienttest

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/drydockhq/drydock"
)

// message is POST /v1/jobs/{id}/messages: the text is checked with the
// domain's rule and stored as a user_message event of a live job, as the
// real server does; a message to a finished job creates its follow-up
// (followUp).
func (s *Server) message(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		writeError(w, drydock.Errorf(drydock.ETOOLARGE, "body is larger than 1 MiB"))
		return
	}
	s.mu.Lock()
	j, ok := s.lookup(w, r)
	terminal := ok && j.Status.Terminal()
	s.mu.Unlock()
	if !ok {
		return
	}
	if terminal {
		s.followUp(w, r, j.ID, body)
		return
	}
	var req struct {
		Text *string `json:"text"`
	}
	if err := decodeStrict(body, &req); err != nil || req.Text == nil {
		writeError(w, drydock.Errorf(drydock.EINVALID, `want {"text": "..."}`))
		return
	}
	if err := drydock.ValidateMessageText(*req.Text); err != nil {
		writeError(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, name := s.principal()
	writeJSON(w, http.StatusAccepted, s.emitLocked(j.ID, drydock.EventUserMessage, drydock.UserMessage{Text: *req.Text, From: name}))
}

// followUpRequest is what a message to a finished job may say: the text,
// which becomes the new job's task, and the fields it overrides (the real
// server's followUpRequest).
type followUpRequest struct {
	Text        *string              `json:"text"`
	Model       *string              `json:"model"`
	MaxSteps    int                  `json:"max_steps"`
	Timeout     drydock.Duration     `json:"timeout"`
	Profile     *drydock.Profile     `json:"profile"`
	Metadata    map[string]string    `json:"metadata"`
	Budget      *int                 `json:"context_budget"`
	Egress      *[]string            `json:"egress"`
	Secrets     drydock.SecretValues `json:"secrets"`
	Interactive *bool                `json:"interactive"`
	Agent       *string              `json:"agent"`
}

// followUp creates the job that continues the finished job parentID with
// the request in body, as the real server does: the parent's spec with
// the text as the task, the request's fields over it, budgets and secrets
// not inherited (the fake keeps no secrets for follow-ups), and the
// parent's archive required. An Idempotency-Key replays as for POST
// /v1/jobs.
func (s *Server) followUp(w http.ResponseWriter, r *http.Request, parentID string, body []byte) {
	var req followUpRequest
	if err := decodeStrict(body, &req); err != nil {
		writeError(w, drydock.Errorf(drydock.EINVALID, "bad follow-up request: %v", err))
		return
	}
	if req.Text == nil {
		writeError(w, drydock.Errorf(drydock.EINVALID, `text is required: send {"text": "..."}`))
		return
	}
	if err := drydock.ValidateMessageText(*req.Text); err != nil {
		writeError(w, err)
		return
	}
	key := unquoteKey(r.Header.Get("Idempotency-Key"))
	if key != "" {
		if err := drydock.CheckIdempotencyKey(key); err != nil {
			writeError(w, err)
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	parent := s.jobs[parentID]
	if parent.NoAgent() {
		writeError(w, drydock.Errorf(drydock.ECONFLICT, "job %s has no agent (agent %q) to read a message; run commands in its sandbox instead (POST /v1/jobs/%s/commands)", parent.ID, drydock.AgentNone, parent.ID))
		return
	}
	if len(s.artifacts[parent.ID]) == 0 {
		writeError(w, drydock.Errorf(drydock.ECONFLICT, "job %s has no archived workspace (it ended %s before its workspace was archived); a follow-up starts from the parent's archive and needs one", parent.ID, parent.Status))
		return
	}
	spec := req.spec(parent)
	spec.Normalize()
	if err := spec.Validate(); err != nil {
		writeError(w, err)
		return
	}
	fp, _ := json.Marshal(struct {
		Parent string
		Spec   drydock.JobSpec
	}{parent.ID, spec})
	rec, held := s.keys[key]
	var j *drydock.Job
	switch {
	case key == "" || !held:
		j = s.addLocked(spec, time.Now())
		j.ParentJobID = parent.ID
		if key != "" {
			s.keys[key] = idemRecord{spec: string(fp), id: j.ID}
		}
	case rec.spec != string(fp):
		writeError(w, drydock.KeyReused(key, time.Now().Add(drydock.DefaultIdempotencyTTL)))
		return
	default:
		j = s.jobs[rec.id]
		w.Header().Set("Idempotent-Replayed", "true")
	}
	v := s.view(j)
	w.Header().Set("Location", v.StatusURL)
	writeJSON(w, http.StatusCreated, v)
}

// spec is the follow-up's job spec: the parent's, with the text as the
// task and the request's fields over it.
func (req *followUpRequest) spec(parent *drydock.Job) drydock.JobSpec {
	spec := parent.JobSpec
	spec.Task = *req.Text
	spec.MaxSteps, spec.Timeout = req.MaxSteps, req.Timeout
	spec.Repo, spec.Secrets = nil, req.Secrets
	spec.Metadata = maps.Clone(parent.Metadata)
	spec.Egress = slices.Clone(parent.Egress)
	if spec.Egress == nil {
		spec.Egress = []string{}
	}
	if req.Model != nil {
		spec.Model = *req.Model
	}
	if req.Profile != nil {
		spec.Profile = *req.Profile
	}
	if req.Metadata != nil {
		spec.Metadata = req.Metadata
	}
	if req.Budget != nil {
		spec.ContextBudget = *req.Budget
	}
	spec.Agent = ""
	if req.Agent != nil {
		spec.Agent = *req.Agent
	}
	if req.Interactive != nil {
		spec.Interactive = *req.Interactive
	} else if spec.Agent == drydock.AgentNone {
		spec.Interactive = false
	}
	if req.Egress != nil {
		spec.Egress = *req.Egress
		if spec.Egress == nil {
			spec.Egress = []string{}
		}
	}
	return spec
}

func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
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
