package clienttest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/drydockhq/drydock"
)

// setEgress is PUT /v1/jobs/{id}/egress: the list is checked with the
// domain's parser and stored, and the change recorded with what it allowed
// and removed and by whom, as the real server does.
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
	added, removed := diffLists(j.Egress, list)
	msg := "egress allowlist changed"
	if len(added) > 0 {
		msg += "; allowed " + strings.Join(added, ", ")
	}
	if len(removed) > 0 {
		msg += "; removed " + strings.Join(removed, ", ")
	}
	if len(list) == 0 {
		msg += "; nothing is allowed now"
	}
	j.Egress, j.EgressSource = list, drydock.EgressFromJob
	by, _ := s.principal()
	s.emitLocked(j.ID, drydock.EventLog, map[string]any{
		"level": "info", "message": msg,
		"egress": map[string]any{"list": list, "added": added, "removed": removed, "by": by},
	})
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

// diffLists returns what after has that before lacks, and the reverse.
func diffLists(before, after []string) (added, removed []string) {
	for _, a := range after {
		if !slices.Contains(before, a) {
			added = append(added, a)
		}
	}
	for _, b := range before {
		if !slices.Contains(after, b) {
			removed = append(removed, b)
		}
	}
	return added, removed
}
