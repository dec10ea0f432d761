package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/drydockhq/drydock"
)

// handleTrajectory streams {"format", "job", "events": [...]} page by page,
// so a long job's log is never held whole in memory.
func (s *Server) handleTrajectory(w http.ResponseWriter, r *http.Request) {
	job, err := s.lookup(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.decorate(r, job)
	jb, _ := json.Marshal(job)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.trajectory.json"`, job.ID))
	fmt.Fprintf(w, `{"format":%q,"job":%s,"events":[`, drydock.TrajectoryFormat, jb)
	first := true
	for after := int64(0); ; {
		events, err := s.store.ListEvents(r.Context(), job.ID, after, 1000)
		if err != nil {
			// The status line is gone: break the JSON so no client takes a
			// cut trajectory for a whole one.
			s.log.Warn("trajectory export failed", "job_id", job.ID, "err", err)
			panic(http.ErrAbortHandler)
		}
		for _, e := range events {
			b, _ := json.Marshal(e)
			if !first {
				w.Write([]byte{','})
			}
			first = false
			w.Write(b)
			after = e.Seq
		}
		if len(events) < 1000 {
			break
		}
	}
	w.Write([]byte("]}\n"))
}
