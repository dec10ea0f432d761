package api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/drydockhq/drydock"
)

// EgressRequest is the body of PUT /v1/jobs/{id}/egress: the whole new
// allowlist (an empty list denies everything).
type EgressRequest struct {
	Egress *[]string `json:"egress"`
}

var egressBody = bodyHelp{fields: "egress", example: `{"egress": ["pypi.example.com:443"]} (the whole new list; [] denies everything)`}

// handleSetEgress replaces a job's egress allowlist, pending or running.
// The change is recorded in the job's event log and reaches the sandbox's
// new connections at once (open ones to removed destinations are closed).
func (s *Server) handleSetEgress(w http.ResponseWriter, r *http.Request) {
	job, err := s.lookup(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req EgressRequest
	if err := s.decodeJSON(w, r, &req, egressBody); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Egress == nil {
		s.writeError(w, r, drydock.Errorf(drydock.EINVALID, `egress is required: the whole new list, as in {"egress": ["pypi.example.com:443"]} ([] denies everything)`))
		return
	}
	list := make([]string, 0, len(*req.Egress))
	for _, e := range *req.Egress {
		list = append(list, strings.TrimSpace(e))
	}
	if err := s.cfg.Egress.Check(list); err != nil {
		s.writeError(w, r, err)
		return
	}
	before := job.Egress
	job, err = s.store.SetEgress(r.Context(), job.ID, list)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	added, removed := diffLists(before, list)
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
	ev := drydock.NewEvent(job.ID, drydock.EventLog, drydock.LogEvent{
		Level: "info", Message: msg,
		Egress: &drydock.EgressNote{List: list, Added: added, Removed: removed, By: principalFrom(r.Context()).ID},
	})
	if err := s.store.AppendEvent(r.Context(), ev); err != nil {
		// The list is changed; a missing note is not worth failing for.
		s.log.Warn("record egress change", "job_id", job.ID, "err", err)
	}
	if s.cfg.EgressChanged != nil {
		s.cfg.EgressChanged(r.Context(), job)
	}
	s.log.Info("egress changed", "job_id", job.ID, "rules", len(list), "by", principalFrom(r.Context()).ID)
	s.decorate(r, job)
	writeJSON(w, http.StatusOK, job)
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
