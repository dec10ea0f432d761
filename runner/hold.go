package runner

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"time"

	"github.com/drydockhq/drydock"
)

// pauseMaxBy names the server as who ended a pause at --pause-max.
const pauseMaxBy = "the server (--pause-max)"

// holder is a job's AgentRun.Hold. It reads the job from the store before
// every model and tool call, so a pause made through any replica takes
// effect at the agent's next call; while the job is paused it polls every
// PausePoll. The heartbeat goes on meanwhile (the lease stays this
// runner's), and a cancel ends ctx, which ends the wait at once.
type holder struct {
	r   *Runner
	id  string
	log *slog.Logger
	// seen is the last seq of the log whose pause events were read;
	// pauses the job's count of pauses at the last check, which tells of a
	// pause that began and ended between two checks.
	seen   int64
	pauses int
}

func (r *Runner) newHolder(job *drydock.Job, history []*drydock.Event, log *slog.Logger) *holder {
	h := &holder{r: r, id: job.ID, log: log, pauses: job.Pauses}
	if n := len(history); n > 0 {
		h.seen = history[n-1].Seq
	}
	return h
}

// Hold returns at once unless the job is paused or was paused since the
// last call; it then waits until no reason to pause holds and returns what
// the pauses were.
func (h *holder) Hold(ctx context.Context) (*drydock.PauseSummary, error) {
	job, err := h.get(ctx)
	if err != nil {
		return nil, err
	}
	if !job.Paused && job.Pauses == h.pauses {
		return nil, nil
	}
	var by []string
	var from time.Time
	desktop := false
	note := func(j *drydock.Job) {
		if j.PausedAt != nil && (from.IsZero() || j.PausedAt.Before(from)) {
			from = *j.PausedAt
		}
		for _, b := range []string{j.PausedBy, j.ControlBy} {
			if b != "" && !slices.Contains(by, b) {
				by = append(by, b)
			}
		}
		desktop = desktop || j.ControlBy != ""
	}
	if job.Paused {
		h.log.Info("job paused; the agent waits", "by", job.PausedBy, "control", job.ControlBy)
	}
	for job.Paused {
		note(job)
		if err := h.expire(ctx, job); err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(h.r.cfg.PausePoll):
		}
		if job, err = h.get(ctx); err != nil {
			return nil, err
		}
	}
	h.pauses = job.Pauses
	sum, found, err := h.summary(ctx)
	if err != nil {
		return nil, err
	}
	if !found && from.IsZero() {
		// A pause that came and went before this run read the log (while
		// the sandbox was prepared): the agent did nothing meanwhile.
		return nil, nil
	}
	if !from.IsZero() && from.Before(sum.From) {
		sum.From = from
	}
	for _, b := range by {
		if !slices.Contains(sum.By, b) {
			sum.By = append(sum.By, b)
		}
	}
	sum.Desktop = sum.Desktop || desktop
	h.log.Info("job resumed; the agent goes on", "paused_for", sum.To.Sub(sum.From).Round(time.Millisecond))
	return sum, nil
}

// get reads the job, retrying a store that fails: a paused job must not run
// on because its pause could not be read.
func (h *holder) get(ctx context.Context) (*drydock.Job, error) {
	for {
		job, err := h.r.deps.Store.GetJob(ctx, h.id)
		if err == nil || ctx.Err() != nil {
			return job, err
		}
		h.log.Warn("read the job's pause state; retrying", "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(h.r.cfg.PausePoll):
		}
	}
}

// expire ends a control lease whose heartbeat stopped, and a pause longer
// than PauseMax. The store decides both on its own clock; this only saves
// it the asking while neither can be due.
func (h *holder) expire(ctx context.Context, job *drydock.Job) error {
	now := time.Now()
	var op drydock.PauseOp
	switch {
	case h.r.cfg.PauseMax > 0 && job.PausedAt != nil && now.Sub(*job.PausedAt) >= h.r.cfg.PauseMax:
		op = drydock.OpEndPause
	case job.ControlLease != "" && job.ControlExpiresAt != nil && !now.Before(*job.ControlExpiresAt):
		op = drydock.OpExpireControl
	default:
		return nil
	}
	_, err := h.r.deps.Store.ChangePause(ctx, h.id, drydock.PauseChange{Op: op, By: pauseMaxBy})
	if err != nil && ctx.Err() == nil {
		// The next poll tries again; the job has not ended for this.
		h.log.Warn("end a pause", "op", op, "err", err)
	}
	if op == drydock.OpEndPause && err == nil {
		h.log.Info("pause ended by --pause-max", "pause_max", h.r.cfg.PauseMax)
	}
	return ctx.Err()
}

// summary reads the pause events the log gained since the last call, and
// says whether there were any.
func (h *holder) summary(ctx context.Context) (*drydock.PauseSummary, bool, error) {
	var sum drydock.PauseSummary
	found := false
	for {
		page, err := h.r.deps.Store.ListEvents(ctx, h.id, h.seen, 1000)
		if err != nil {
			return nil, false, err
		}
		for _, e := range page {
			h.seen = e.Seq
			if e.Type != drydock.EventPaused && e.Type != drydock.EventResumed {
				continue
			}
			var p drydock.PauseEvent
			if err := json.Unmarshal(e.Data, &p); err != nil {
				continue
			}
			addPause(&sum, e, p)
			found = true
		}
		if len(page) < 1000 {
			break
		}
	}
	if sum.From.IsZero() {
		sum.From = time.Now()
	}
	if sum.To.IsZero() || sum.To.Before(sum.From) {
		sum.To = time.Now()
	}
	return &sum, found, nil
}

// addPause folds one paused or resumed event into sum.
func addPause(sum *drydock.PauseSummary, e *drydock.Event, p drydock.PauseEvent) {
	from, to := e.Time, time.Time{}
	if p.From != nil && p.To != nil {
		from, to = *p.From, *p.To
	}
	if sum.From.IsZero() || from.Before(sum.From) {
		sum.From = from
	}
	if to.After(sum.To) {
		sum.To = to
	}
	if e.Type == drydock.EventPaused && p.By != "" && !slices.Contains(sum.By, p.By) {
		sum.By = append(sum.By, p.By)
	}
	if !slices.Contains(sum.Reasons, p.Reason) {
		sum.Reasons = append(sum.Reasons, p.Reason)
	}
	sum.Desktop = sum.Desktop || p.Reason == drydock.PauseControl
}
