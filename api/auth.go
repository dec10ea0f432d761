package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/drydockhq/drydock"
)

// Principal is who makes a request.
type Principal struct {
	ID    string // token id; "local" in development mode
	Admin bool
	// Name is the token's name ("" in development mode): who sent a
	// message to an agent, paused a job or holds its desktop.
	Name string
}

type principalKey struct{}

func principalFrom(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}

// LocalPrincipal acts for unauthenticated requests in development mode.
var LocalPrincipal = Principal{ID: "local", Admin: true}

// authenticate resolves the bearer token. In development mode a request
// without a token is the local admin; a token that is sent must still be
// valid, so that scripts behave the same in both modes.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		if h == "" {
			dev, err := s.devMode(r.Context())
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			if dev {
				next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, LocalPrincipal)))
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="drydock"`)
			s.writeError(w, r, drydock.Errorf(drydock.EUNAUTHORIZED, "missing bearer token: send 'Authorization: Bearer <token>' (create one with 'drydock token create')"))
			return
		}
		secret, ok := bearerToken(h)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="drydock"`)
			s.writeError(w, r, drydock.Errorf(drydock.EUNAUTHORIZED, "the Authorization header must be 'Bearer <token>'"))
			return
		}
		tok, err := s.store.TokenByHash(r.Context(), drydock.HashToken(secret))
		if drydock.ErrorCode(err) == drydock.ENOTFOUND {
			w.Header().Set("WWW-Authenticate", `Bearer realm="drydock", error="invalid_token"`)
			s.writeError(w, r, drydock.Errorf(drydock.EUNAUTHORIZED, "invalid or revoked token"))
			return
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		p := Principal{ID: tok.ID, Admin: tok.Admin, Name: tok.Name}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// devMode reports whether requests without a token act as the local admin
// now: only on a loopback server (cfg.DevMode) and only while no unrevoked
// token exists. It asks the store every time rather than deciding at start,
// so that creating the first token (from the CLI, on this or another
// replica) closes anonymous access at once, and revoking the last one is
// seen at once too.
func (s *Server) devMode(ctx context.Context) (bool, error) {
	if !s.cfg.DevMode {
		return false, nil
	}
	n, err := s.store.CountTokens(ctx)
	if err != nil {
		return false, fmt.Errorf("count tokens: %w", err)
	}
	return n == 0, nil
}

// visible reports whether p may see job; other owners' jobs are reported as
// not found so that ids cannot be probed.
func visible(p Principal, job *drydock.Job) bool {
	return p.Admin || job.OwnerID == p.ID
}

// bearerToken reads the credentials of an Authorization header of the
// Bearer scheme, whose name is case-insensitive (RFC 9110 §11.1).
func bearerToken(h string) (string, bool) {
	scheme, cred, _ := strings.Cut(strings.TrimSpace(h), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	cred = strings.TrimSpace(cred)
	return cred, cred != ""
}
