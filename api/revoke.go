package api

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/drydockhq/drydock"
)

// DefaultRevocationCheck is how often open event streams and live views
// learn whether the principal that opened them is still valid.
const DefaultRevocationCheck = 2 * time.Second

// errRevoked ends a stream or live view whose principal is no longer valid:
// its token was revoked, or, for the local principal, development mode
// ended because a token was created.
var errRevoked = errors.New("access was revoked")

// principalValid reports whether p may still act: a token that is not
// revoked, or the local principal while development mode lasts. A store
// error is returned as such, so that a passing outage is not taken for a
// revocation.
func (s *Server) principalValid(ctx context.Context, id string) (*Principal, error) {
	if id == LocalPrincipal.ID {
		dev, err := s.devMode(ctx)
		if err != nil || !dev {
			return nil, err
		}
		p := LocalPrincipal
		return &p, nil
	}
	if id == "" {
		return nil, nil
	}
	tok, err := s.store.TokenByID(ctx, id)
	if drydock.ErrorCode(err) == drydock.ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up token %s: %w", id, err)
	}
	return &Principal{ID: tok.ID, Admin: tok.Admin, Name: tok.Name}, nil
}

// revocations ends the streams and live views of principals that are no
// longer valid. One goroutine, running only while something is open, asks
// the store about each distinct principal every interval: the cost grows
// with the number of tokens that have something open, not with the number
// of connections or events.
type revocations struct {
	s     *Server
	every time.Duration

	mu      sync.Mutex
	open    map[string]map[*watcher]struct{} // by principal id
	running bool
}

type watcher struct{ cancel context.CancelCauseFunc }

func newRevocations(s *Server, every time.Duration) *revocations {
	if every <= 0 {
		every = DefaultRevocationCheck
	}
	return &revocations{s: s, every: every, open: map[string]map[*watcher]struct{}{}}
}

// whileValid returns a context that ends with parent or, with cause
// errRevoked, once p is no longer valid. The caller must call stop when the
// connection ends.
func (v *revocations) whileValid(parent context.Context, p Principal) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	w := &watcher{cancel: cancel}
	v.mu.Lock()
	set := v.open[p.ID]
	if set == nil {
		set = map[*watcher]struct{}{}
		v.open[p.ID] = set
	}
	set[w] = struct{}{}
	if !v.running {
		v.running = true
		go v.loop()
	}
	v.mu.Unlock()
	return ctx, func() {
		v.mu.Lock()
		if set := v.open[p.ID]; set != nil {
			delete(set, w)
			if len(set) == 0 {
				delete(v.open, p.ID)
			}
		}
		v.mu.Unlock()
		cancel(context.Canceled)
	}
}

// loop checks the open principals every interval until none is left.
func (v *revocations) loop() {
	t := time.NewTicker(v.every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-v.s.closing:
			// Streams and views end by themselves on shutdown.
			v.mu.Lock()
			v.running = false
			v.mu.Unlock()
			return
		}
		v.mu.Lock()
		if len(v.open) == 0 {
			v.running = false
			v.mu.Unlock()
			return
		}
		ids := make([]string, 0, len(v.open))
		for id := range v.open {
			ids = append(ids, id)
		}
		v.mu.Unlock()
		for _, id := range ids {
			v.check(id)
		}
	}
}

func (v *revocations) check(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), v.every+5*time.Second)
	defer cancel()
	p, err := v.s.principalValid(ctx, id)
	if err != nil {
		// Keep what is open: a store that does not answer is not a
		// revocation, and the streams fail by themselves if it stays down.
		v.s.log.Warn("cannot check whether a principal is still valid", "principal", id, "err", err)
		return
	}
	if p != nil {
		return
	}
	v.mu.Lock()
	set := v.open[id]
	delete(v.open, id)
	v.mu.Unlock()
	if len(set) > 0 {
		v.s.log.Info("closing the streams and live views of a revoked principal", "principal", id, "open", len(set))
	}
	for w := range set {
		w.cancel(errRevoked)
	}
}
