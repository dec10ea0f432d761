package clienttest

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/drydockhq/drydock"
)

// setEgress is PUT /v1/jobs/{id}/egress: the list is checked with the
// domain's parser and stored, as the real server does.
func (s *Server) setEgress(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Egress *[]string `json:"egress"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Egress == nil {
		writeError(w, drydock.Errorf(drydock.EINVALID, `want {"egress": [...]}`))
		return
	}
	list := make([]string, 0, len(*req.Egress))
	for _, e := range *req.Egress {
		list = append(list, strings.TrimSpace(e))
	}
	if _, err := drydock.ParseEgress(list); err != nil {
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
		writeError(w, drydock.Errorf(drydock.ECONFLICT, "job %s is %s; its egress can no longer change", j.ID, j.Status))
		return
	}
	j.Egress, j.EgressSource = list, drydock.EgressFromJob
	s.emitLocked(j.ID, drydock.EventLog, map[string]any{"level": "info", "message": "egress allowlist changed"})
	writeJSON(w, http.StatusOK, s.view(j))
}

// SetEgressDefault gives a job the list a server's --egress-default would
// have given it at creation.
func (s *Server) SetEgressDefault(id string, list []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j, ok := s.jobs[id]; ok {
		j.Egress, j.EgressSource = list, drydock.EgressFromDefault
	}
}
