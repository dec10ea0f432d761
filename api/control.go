package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/drydockhq/drydock"
)

// DefaultControlTTL is how long a desktop's control lease lasts without a
// renewal: a viewer whose connection died silently (a laptop closed, a
// replica killed) holds the agent for at most this long.
const DefaultControlTTL = 30 * time.Second

// controlLease is one desktop connection's hold on the job's control.
// It lives in the store, so every replica, and the runner
// that holds the agent, agree on who has it. It is taken when the
// connection opens, renewed every third of its TTL while it stays open,
// and released when it closes; input passes only while it is held.
type controlLease struct {
	s      *Server
	jobID  string
	holder string
	by     string
	ttl    time.Duration
	log    *slog.Logger
	ok     atomic.Bool
}

func (s *Server) takeControl(ctx context.Context, a *liveAccess, log *slog.Logger) (*controlLease, error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	l := &controlLease{s: s, jobID: a.job.ID, holder: hex.EncodeToString(b[:]), by: principalName(a.who), ttl: s.cfg.ControlTTL, log: log}
	if l.ttl <= 0 {
		l.ttl = DefaultControlTTL
	}
	if _, err := s.store.ChangePause(ctx, l.jobID, drydock.PauseChange{Op: drydock.OpTakeControl, Holder: l.holder, By: l.by, TTL: l.ttl}); err != nil {
		return nil, err
	}
	l.ok.Store(true)
	log.Info("desktop control taken; the agent waits", "by", l.by)
	return l, nil
}

// held reports whether the connection still holds control.
func (l *controlLease) held() bool { return l.ok.Load() }

// errControlEnded closes a controlling connection whose lease was ended
// elsewhere: the page then goes back to watching, rather than show "you
// control" while its input is dropped, or take control again by itself
// (which would undo --pause-max).
type errControlEnded struct{ reason string }

func (e errControlEnded) Error() string { return "desktop control ended: " + e.reason }

// keep renews the lease until ctx ends. A renewal the store refuses (the
// lease was ended by --pause-max, or expired and was taken by another)
// ends this connection's control for good: its input is dropped from then
// on, and lost is called to close the connection.
func (l *controlLease) keep(ctx context.Context, lost func(error)) {
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, err := l.s.store.ChangePause(ctx, l.jobID, drydock.PauseChange{Op: drydock.OpRenewControl, Holder: l.holder, TTL: l.ttl})
		switch code := drydock.ErrorCode(err); {
		case err == nil:
		case ctx.Err() != nil:
			return
		case code == drydock.ECONFLICT || code == drydock.ENOTFOUND:
			l.ok.Store(false)
			l.log.Info("desktop control ended; input is dropped and the connection closed", "reason", drydock.ErrorMessage(err))
			lost(errControlEnded{drydock.ErrorMessage(err)})
			return
		default:
			// The lease outlives two failed renewals; the next may pass.
			l.log.Warn("renew desktop control", "err", err)
		}
	}
}

// release ends the lease, which resumes the agent unless another reason
// holds it paused. It runs as the connection closes, on a context of its
// own: the request's is over by then.
func (l *controlLease) release() {
	l.ok.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := l.s.store.ChangePause(ctx, l.jobID, drydock.PauseChange{Op: drydock.OpReleaseControl, Holder: l.holder}); err != nil {
		// It expires by itself within its TTL.
		l.log.Warn("release desktop control", "err", err)
		return
	}
	l.log.Info("desktop control released")
}

// controlTaken is the conflict of asking for control that someone holds.
// The store decides again when the link is used.
func controlTaken(job *drydock.Job, now time.Time) error {
	if job.ControlLease != "" && job.ControlExpiresAt != nil && job.ControlExpiresAt.After(now) {
		return drydock.Errorf(drydock.ECONFLICT, "%s has control of this job's desktop; try again when they release it", job.ControlBy)
	}
	return nil
}
