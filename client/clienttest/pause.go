package clienttest

import (
	"net/http"
	"time"

	"github.com/drydockhq/drydock"
)

// pauseOp serves POST /v1/jobs/{id}/pause and /resume with the store's own
// rule (drydock.ApplyPause), by the principal's name.
func (s *Server) pauseOp(op drydock.PauseOp) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		j, ok := s.lookup(w, r)
		if !ok {
			return
		}
		_, name := s.principal()
		recs, err := drydock.ApplyPause(j, drydock.PauseChange{Op: op, By: name}, time.Now())
		if err != nil {
			writeError(w, err)
			return
		}
		for _, rec := range recs {
			s.emitLocked(j.ID, rec.Type, rec.Data)
		}
		v := s.view(j)
		if d := j.PausedFor(time.Now()); d > 0 {
			v.PausedSeconds = d.Seconds()
		}
		writeJSON(w, http.StatusOK, v)
	}
}
