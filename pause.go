package drydock

import (
	"fmt"
	"time"
)

// Pause and take-over. A job is paused while a person paused
// it (PausedBy) or holds control of its live desktop (ControlLease), or
// both; its agent makes no model call and runs no tool until neither holds.
// The state lives in the store, so every replica sees the same.

// PauseReason says why a job was paused or resumed.
type PauseReason string

const (
	PauseUser    PauseReason = "user"      // pause and resume through the API
	PauseControl PauseReason = "control"   // a person took or released control of the desktop
	PauseMax     PauseReason = "pause-max" // the server's --pause-max ended a long pause
)

// PauseOp is one change of a job's pause state.
type PauseOp int

const (
	// OpPause pauses for a person (idempotent).
	OpPause PauseOp = iota + 1
	// OpResume lifts the person's pause (idempotent); a control lease, if
	// held, keeps the job paused.
	OpResume
	// OpTakeControl gives Holder the desktop's control lease until now+TTL;
	// the same Holder renews it. ECONFLICT while another holder's lease
	// has not expired.
	OpTakeControl
	// OpRenewControl extends Holder's lease; ECONFLICT when Holder does not
	// hold it any more (released, expired and taken, or ended by
	// pause-max).
	OpRenewControl
	// OpReleaseControl ends Holder's lease; nothing when another holds it.
	OpReleaseControl
	// OpExpireControl ends a lease whose expiry has passed, as of its
	// expiry (the holder's connection died without releasing it).
	OpExpireControl
	// OpEndPause lifts every reason at once (pause-max).
	OpEndPause
)

// PauseChange asks a store to change a job's pause state (Store.ChangePause).
type PauseChange struct {
	Op PauseOp
	// By names who asks, as shown to people and the agent: a token's
	// name, "local", or the server.
	By string
	// Holder identifies one control lease (one desktop connection).
	Holder string
	// TTL is how long a control lease lasts without a renewal.
	TTL time.Duration
}

// PauseEvent is the data of a paused or resumed event.
type PauseEvent struct {
	Reason PauseReason `json:"reason"`
	By     string      `json:"by,omitempty"`
	// From and To bound the pause that ended (resumed events that end it);
	// Seconds is To minus From.
	From    *time.Time `json:"from,omitempty"`
	To      *time.Time `json:"to,omitempty"`
	Seconds float64    `json:"seconds,omitempty"`
	// StillPaused is set on a resumed event that lifted one reason while
	// another holds the job (a release of control during a user pause).
	StillPaused bool `json:"still_paused,omitempty"`
	// Expired is set when a control lease ended because its heartbeat
	// stopped.
	Expired bool `json:"expired,omitempty"`
}

// PauseRecord is an event a pause change records.
type PauseRecord struct {
	Type EventType
	Data PauseEvent
}

// ApplyPause changes j's pause state as c asks, at now (the store's clock),
// and returns the events to record with it (none when nothing changed).
// Stores call it inside the transaction that holds the job, so that the
// state and its event are written together.
func ApplyPause(j *Job, c PauseChange, now time.Time) ([]PauseRecord, error) {
	now = now.UTC().Truncate(time.Microsecond)
	if j.Status.Terminal() {
		switch c.Op {
		case OpPause:
			return nil, Errorf(ECONFLICT, "job is %s; nothing to pause", j.Status)
		case OpResume:
			return nil, Errorf(ECONFLICT, "job is %s; nothing to resume", j.Status)
		case OpTakeControl, OpRenewControl:
			return nil, Errorf(ECONFLICT, "job is %s; its desktop is gone", j.Status)
		}
		// A finished job's leftovers (a lease its end cut short) end
		// quietly: the pause already ended with the job.
		return nil, nil
	}
	switch c.Op {
	case OpPause:
		if j.PausedBy != "" {
			return nil, nil
		}
		j.PausedBy = nonEmpty(c.By)
		j.startPause(now)
		return []PauseRecord{{Type: EventPaused, Data: PauseEvent{Reason: PauseUser, By: j.PausedBy}}}, nil
	case OpResume:
		if j.PausedBy == "" {
			return nil, nil
		}
		j.PausedBy = ""
		return []PauseRecord{j.endReason(PauseUser, c.By, now)}, nil
	case OpTakeControl:
		if c.Holder == "" || c.TTL <= 0 {
			return nil, Errorf(EINVALID, "a control lease needs a holder and a ttl")
		}
		if j.ControlLease == c.Holder {
			j.ControlExpiresAt = ptr(now.Add(c.TTL))
			return nil, nil
		}
		if j.ControlLease != "" && j.ControlExpiresAt != nil && j.ControlExpiresAt.After(now) {
			return nil, Errorf(ECONFLICT, "%s has control of this job's desktop; try again when they release it", j.ControlBy)
		}
		var recs []PauseRecord
		if j.ControlLease != "" {
			// An expired lease nobody cleared: it ends at its expiry, and
			// the new holder's pause starts now.
			recs = append(recs, j.endControl(*j.ControlExpiresAt, true))
		}
		j.ControlLease, j.ControlBy, j.ControlExpiresAt = c.Holder, nonEmpty(c.By), ptr(now.Add(c.TTL))
		j.startPause(now)
		return append(recs, PauseRecord{Type: EventPaused, Data: PauseEvent{Reason: PauseControl, By: j.ControlBy}}), nil
	case OpRenewControl:
		if c.Holder == "" || j.ControlLease != c.Holder {
			return nil, Errorf(ECONFLICT, "control of this job's desktop was released")
		}
		j.ControlExpiresAt = ptr(now.Add(c.TTL))
		return nil, nil
	case OpReleaseControl:
		if c.Holder == "" || j.ControlLease != c.Holder {
			return nil, nil
		}
		return []PauseRecord{j.endControl(now, false)}, nil
	case OpExpireControl:
		if j.ControlLease == "" || j.ControlExpiresAt == nil || j.ControlExpiresAt.After(now) {
			return nil, nil
		}
		return []PauseRecord{j.endControl(*j.ControlExpiresAt, true)}, nil
	case OpEndPause:
		if !j.Paused {
			return nil, nil
		}
		j.PausedBy, j.ControlLease, j.ControlBy, j.ControlExpiresAt = "", "", "", nil
		return []PauseRecord{j.endReason(PauseMax, nonEmpty(c.By), now)}, nil
	}
	return nil, Errorf(EINVALID, "unknown pause change %d", c.Op)
}

func (j *Job) startPause(now time.Time) {
	if j.PausedAt == nil {
		j.PausedAt = ptr(now)
		j.Pauses++
	}
	j.Paused = true
}

func (j *Job) endControl(at time.Time, expired bool) PauseRecord {
	by := j.ControlBy
	j.ControlLease, j.ControlBy, j.ControlExpiresAt = "", "", nil
	rec := j.endReason(PauseControl, by, at)
	rec.Data.Expired = expired
	return rec
}

// endReason records that one reason ended at to, and ends the pause when no
// other reason holds.
func (j *Job) endReason(reason PauseReason, by string, to time.Time) PauseRecord {
	ev := PauseEvent{Reason: reason, By: by}
	if j.PausedBy != "" || j.ControlLease != "" {
		ev.StillPaused = true
		return PauseRecord{Type: EventResumed, Data: ev}
	}
	if j.PausedAt != nil {
		from := *j.PausedAt
		if to.Before(from) {
			to = from
		}
		j.PausedTotal += to.Sub(from)
		ev.From, ev.To, ev.Seconds = ptr(from), ptr(to), to.Sub(from).Seconds()
	}
	j.PausedAt, j.Paused = nil, false
	return PauseRecord{Type: EventResumed, Data: ev}
}

// SettlePause derives Paused from the stored state, and ends the pause of a
// finished job as of its end: the job's end lifts every pause, without a
// write of its own. Stores call it on every job they read.
func (j *Job) SettlePause() {
	if j.Status.Terminal() && j.PausedAt != nil {
		end := time.Now()
		if j.FinishedAt != nil {
			end = *j.FinishedAt
		}
		if end.After(*j.PausedAt) {
			j.PausedTotal += end.Sub(*j.PausedAt)
		}
		j.PausedAt, j.PausedBy, j.ControlLease, j.ControlBy, j.ControlExpiresAt = nil, "", "", "", nil
	}
	j.Paused = j.PausedAt != nil
}

// PausedFor is how long the job has been paused in all, the current pause
// up to now included.
func (j *Job) PausedFor(now time.Time) time.Duration {
	d := j.PausedTotal
	if j.PausedAt != nil && now.After(*j.PausedAt) {
		d += now.Sub(*j.PausedAt)
	}
	return d
}

// PauseSummary describes, for the agent, a pause that ended: what the
// runner's Hold returns after waiting (AgentRun.Hold).
type PauseSummary struct {
	From, To time.Time
	// By names who paused, in order, without repeats.
	By []string
	// Reasons holds each reason that took part, in order, without repeats.
	Reasons []PauseReason
	// Desktop reports that a person had control of the desktop: the
	// screen may have changed under the agent.
	Desktop bool
}

// Notice is the sentence the agent's model reads after the pause.
func (p *PauseSummary) Notice() string {
	who := "a person"
	if len(p.By) > 0 {
		who = joinAnd(p.By)
	}
	const layout = "15:04:05 MST"
	s := fmt.Sprintf("The job was paused from %s to %s (%s) by %s.", p.From.UTC().Format(layout), p.To.UTC().Format(layout), p.To.Sub(p.From).Round(time.Second), who)
	for _, r := range p.Reasons {
		if r == PauseMax {
			s += " It resumed by itself after the server's longest pause (--pause-max)."
		}
	}
	if p.Desktop {
		s += " A person used the desktop in that time, so windows, files or the screen may have changed: check the state before you continue."
	}
	return s
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 1:
		return xs[0]
	case 2:
		return xs[0] + " and " + xs[1]
	}
	s := ""
	for i, x := range xs {
		switch {
		case i == len(xs)-1:
			s += ", and " + x
		case i > 0:
			s += ", " + x
		default:
			s = x
		}
	}
	return s
}

func nonEmpty(by string) string {
	if by == "" {
		return "someone"
	}
	return by
}

func ptr[T any](v T) *T { return &v }
