package api

import (
	"net/http"

	"github.com/drydockhq/drydock"
)

// followUp answers a message to a finished job. Follow-ups (issue 16 §3)
// are built in another branch, whose followUp replaces this one; until
// then the message is refused and nothing is stored.
func (s *Server) followUp(w http.ResponseWriter, r *http.Request, job *drydock.Job, body []byte) {
	s.writeError(w, r, drydock.Errorf(drydock.ECONFLICT, "job %s is %s: follow-ups of finished jobs are not available yet", job.ID, job.Status))
}
