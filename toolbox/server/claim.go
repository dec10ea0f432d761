package server

import (
	"crypto/subtle"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// VNCRekeyer is a Desktop whose VNC password can be replaced while it runs.
// Claim needs it to give a claimed desktop sandbox the job's own password.
type VNCRekeyer interface {
	SetVNCPassword(password string) error
}

// Claim hands a warm sandbox to a job: it refuses unless the workspace is
// empty and no shell session exists (a warm sandbox never ran anything),
// then replaces the token, and the desktop's VNC password when a desktop
// runs. From then on the old token is refused.
func (s *Server) Claim(req toolbox.ClaimRequest) error {
	req.Token = strings.TrimSpace(req.Token)
	if req.Token == "" {
		return drydock.Errorf(drydock.EINVALID, "claim needs a new token")
	}
	// One claim at a time, and one claim ever: the lock is held until the
	// new token is in place, so two claimers cannot both succeed.
	s.authMu.Lock()
	defer s.authMu.Unlock()
	if s.claimed {
		return drydock.Errorf(drydock.ECONFLICT, "this sandbox was claimed already")
	}
	if s.tokenH == hashToken(req.Token) {
		return drydock.Errorf(drydock.EINVALID, "the new token must differ from the current one")
	}
	if err := s.checkPristine(); err != nil {
		return err
	}
	if s.cfg.Desktop != nil {
		if req.VNCPassword == "" {
			return drydock.Errorf(drydock.EINVALID, "claiming a desktop sandbox needs a new VNC password")
		}
		rk, ok := s.cfg.Desktop.(VNCRekeyer)
		if !ok {
			return drydock.Errorf(drydock.ENOTIMPLEMENTED, "this desktop cannot change its VNC password")
		}
		if err := rk.SetVNCPassword(req.VNCPassword); err != nil {
			return err
		}
	}
	s.tokenH, s.claimed = hashToken(req.Token), true
	s.log.Info("sandbox claimed; token replaced")
	return nil
}

// checkPristine is the evidence that nothing ran in the sandbox yet.
func (s *Server) checkPristine() error {
	root, err := s.ws.open()
	if err != nil {
		return err
	}
	d, err := root.Open(".")
	if err != nil {
		return drydock.Errorf(drydock.EUNAVAILABLE, "workspace is not accessible: %s", errText(err))
	}
	defer d.Close()
	names, err := d.Readdirnames(1)
	if err != nil && !errors.Is(err, io.EOF) {
		return drydock.Errorf(drydock.EUNAVAILABLE, "read workspace: %s", errText(err))
	}
	if len(names) > 0 {
		return drydock.Errorf(drydock.ECONFLICT, "the workspace is not empty (it holds %q); only a fresh sandbox can be claimed", names[0])
	}
	s.sessions.mu.Lock()
	n := len(s.sessions.m)
	s.sessions.mu.Unlock()
	if n > 0 {
		return drydock.Errorf(drydock.ECONFLICT, "%d shell sessions exist; only a fresh sandbox can be claimed", n)
	}
	return nil
}

func (s *Server) currentTokenHash() [32]byte {
	s.authMu.RLock()
	defer s.authMu.RUnlock()
	return s.tokenH
}

// tokenMatches compares hashes in constant time, so neither the token's
// content nor its length leaks through timing.
func (s *Server) tokenMatches(tok string) bool {
	got, want := hashToken(tok), s.currentTokenHash()
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

func (s *Server) handleClaim(w http.ResponseWriter, r *http.Request) {
	var req toolbox.ClaimRequest
	if err := decodeJSON(w, r, &req); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if err := s.Claim(req); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
