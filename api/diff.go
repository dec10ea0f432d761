package api

import (
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/secretbox"
	"github.com/drydockhq/drydock/toolbox"
)

// diffSlots bounds the diffs this process holds at once.
var diffSlots = make(chan struct{}, 8)

// handleDiff answers the workspace's diff against what the job started
// from: computed in the sandbox while the job runs, the stored one after.
// git runs inside the sandbox only; the host reads its output as bytes.
func (s *Server) handleDiff(w http.ResponseWriter, r *http.Request) {
	if len(r.URL.Query()) > 0 {
		s.writeError(w, r, drydock.Errorf(drydock.EINVALID, "the diff takes no query parameters"))
		return
	}
	job, err := s.lookup(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Each diff is held whole (up to MaxDiffBytes) to be masked and cut, so
	// a burst of requests waits its turn rather than fill the memory.
	select {
	case diffSlots <- struct{}{}:
		defer func() { <-diffSlots }()
	case <-r.Context().Done():
		return
	}
	sb, done := s.workspaceSource(w, r, job, " to diff")
	if done {
		return
	}
	if sb != nil {
		s.serveLiveDiff(w, r, job, sb)
		return
	}
	rc, err := s.artifacts.Get(r.Context(), drydock.DiffArtifactKey(job.ID))
	if drydock.ErrorCode(err) == drydock.ENOTFOUND {
		s.writeError(w, r, drydock.Errorf(drydock.ENOTFOUND, "job %s has no stored diff: its starting point was not recorded or the diff failed (see its events); its archive is at artifact.zip", job.ID))
		return
	}
	if err != nil {
		s.writeError(w, r, fmt.Errorf("open diff of job %s: %w", job.ID, err))
		return
	}
	defer rc.Close()
	// The runner stored it masked and cut to size; read no more than that
	// limit allows anyway.
	patch, err := io.ReadAll(io.LimitReader(rc, toolbox.MaxDiffBytes+1))
	if err != nil {
		s.writeError(w, r, fmt.Errorf("read diff of job %s: %w", job.ID, err))
		return
	}
	writeDiff(w, job, patch, diffTruncated(patch))
}

func (s *Server) serveLiveDiff(w http.ResponseWriter, r *http.Request, job *drydock.Job, sb *drydock.Sandbox) {
	values, err := s.secretValues(job)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var mask func(string) string
	if len(values) > 0 {
		mask = func(p string) string { return secretbox.MaskString(p, values) }
	}
	// A binary patch carries contents deflated and base85-encoded, where no
	// mask can find a value: a job with secrets gets "Binary files differ".
	res, err := s.toolboxFor(sb).Diff(r.Context(), len(values) == 0, mask)
	switch {
	case err == toolbox.ErrNoBaseline:
		s.writeError(w, r, drydock.Errorf(drydock.ECONFLICT, "job %s has not recorded its starting point yet (or could not: see its events); try again in a moment", job.ID))
		return
	case err != nil:
		s.writeError(w, r, fmt.Errorf("diff the workspace of job %s: %w", job.ID, err))
		return
	}
	writeDiff(w, job, res.Patch, res.Truncated)
}

func writeDiff(w http.ResponseWriter, job *drydock.Job, patch []byte, truncated bool) {
	h := w.Header()
	// Workspace text, so never anything a browser would run.
	h.Set("Content-Type", "text/x-diff; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("Content-Disposition", fmt.Sprintf(`inline; filename="%s.diff"`, job.ID))
	h.Set("Content-Length", strconv.Itoa(len(patch)))
	if truncated {
		h.Set("Drydock-Diff-Truncated", "true")
	}
	w.WriteHeader(http.StatusOK)
	w.Write(patch)
}

// diffTruncated says whether a stored diff ends with the cut marker.
func diffTruncated(p []byte) bool {
	i := len(p) - 1
	for i > 0 && p[i-1] != '\n' {
		i--
	}
	return i >= 0 && len(p)-i >= len(toolbox.DiffTruncatedMarker) && string(p[i:i+len(toolbox.DiffTruncatedMarker)]) == toolbox.DiffTruncatedMarker
}
