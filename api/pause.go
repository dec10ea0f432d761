package api

import (
	"net/http"
	"time"

	"github.com/drydockhq/drydock"
)

// Pause and resume. Both answer the job as it is afterwards,
// 200 also when it already was in that state, so that a retried request
// and a second person's click agree with the first.

func (s *Server) handlePause(w http.ResponseWriter, r *http.Request) {
	s.changePause(w, r, drydock.OpPause)
}

func (s *Server) handleResume(w http.ResponseWriter, r *http.Request) {
	s.changePause(w, r, drydock.OpResume)
}

func (s *Server) changePause(w http.ResponseWriter, r *http.Request, op drydock.PauseOp) {
	job, err := s.lookup(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	job, err = s.store.ChangePause(r.Context(), job.ID, drydock.PauseChange{Op: op, By: principalName(principalFrom(r.Context()))})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.decorate(r, job)
	writeJSON(w, http.StatusOK, job)
}

// principalName is how a principal is named to people and to the agent:
// the token's name, else its id ("local" in development mode).
func principalName(p Principal) string {
	if p.Name != "" {
		return p.Name
	}
	if p.ID == LocalPrincipal.ID {
		return "local user"
	}
	return "token " + p.ID
}

// decoratePause fills the paused time shown, the current pause included.
func decoratePause(job *drydock.Job) {
	if d := job.PausedFor(time.Now()); d > 0 {
		job.PausedSeconds = d.Round(time.Millisecond).Seconds()
	}
}
