package egress

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/drydockhq/drydock"
)

// Reporter records refusals in the job's event log, so that the job's
// owner (and the agent reading its history) sees why a download failed. A
// sandbox retrying in a loop must not flood the log: each destination is
// recorded at most once per Every, and a job at most Burst times per Every;
// the next record says how many were left out.
type Reporter struct {
	Store  drydock.Store
	Every  time.Duration // default 1m
	Burst  int           // default 10
	Logger *slog.Logger

	mu    sync.Mutex
	dests map[[2]string]*seen // by job and destination
	jobs  map[string]*seen
}

type seen struct {
	at time.Time // last recorded; for a job, the start of its window
	n  int       // refusals not recorded since; for a job, records in its window
}

// maxTracked bounds the destinations remembered; past it, the oldest
// knowledge is dropped (which at worst records a refusal early).
const maxTracked = 10000

// Deny is a Config.OnDeny.
func (r *Reporter) Deny(jobID string, d Denial) {
	every, burst := r.Every, r.Burst
	if every <= 0 {
		every = time.Minute
	}
	if burst <= 0 {
		burst = 10
	}
	now := time.Now()
	r.mu.Lock()
	if r.dests == nil || len(r.dests) > maxTracked {
		r.dests, r.jobs = map[[2]string]*seen{}, map[string]*seen{}
	}
	key := [2]string{jobID, d.Dest()}
	ds := r.dests[key]
	if ds == nil {
		ds = &seen{}
		r.dests[key] = ds
	}
	js := r.jobs[jobID]
	if js == nil || now.Sub(js.at) >= every {
		js = &seen{at: now}
		r.jobs[jobID] = js
	}
	if !ds.at.IsZero() && now.Sub(ds.at) < every || js.n >= burst {
		ds.n++
		r.mu.Unlock()
		return
	}
	left := ds.n
	ds.at, ds.n = now, 0
	js.n++
	r.mu.Unlock()

	msg := fmt.Sprintf("egress refused: %s (%s)", d.Dest(), d.Reason)
	if left > 0 {
		msg += fmt.Sprintf("; %d more refusals of it not recorded", left)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ev := drydock.NewEvent(jobID, drydock.EventLog, drydock.LogEvent{
		Level: "warn", Message: msg,
		Egress: &drydock.EgressNote{Dest: d.Dest(), Status: d.Status, Reason: d.Reason, NotRecorded: left},
	})
	if err := r.Store.AppendEvent(ctx, ev); err != nil && r.Logger != nil {
		r.Logger.Warn("record egress refusal", "job_id", jobID, "err", err)
	}
}
