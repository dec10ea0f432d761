package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/drydockhq/drydock"
)

// AppendMessage appends e to the log of a job that has not finished; the
// status check and the append are one write, so a message can never land
// after the job's final status event.
func (s *Store) AppendMessage(ctx context.Context, e *drydock.Event) error {
	data, err := eventData(e)
	if err != nil {
		return err
	}
	t := e.Time
	if t.IsZero() {
		t = now()
	}
	t = t.UTC().Truncate(time.Microsecond)
	var seq int64
	err = s.w.do(ctx, func(ctx context.Context, tx *wtx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE job_id = ? AND type = ?`, e.JobID, string(drydock.EventUserMessage)).Scan(&n); err != nil {
			return err
		}
		if n >= drydock.MaxMessagesPerJob {
			return tooManyMessages(e.JobID, n)
		}
		err := tx.QueryRowContext(ctx, `UPDATE jobs SET last_seq = last_seq + 1
			WHERE id = ? AND status IN ('pending', 'running') RETURNING last_seq`, e.JobID).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			var status string
			err = tx.QueryRowContext(ctx, `SELECT status FROM jobs WHERE id = ?`, e.JobID).Scan(&status)
			if errors.Is(err, sql.ErrNoRows) {
				return notFound(e.JobID)
			}
			if err != nil {
				return err
			}
			return drydock.Errorf(drydock.ECONFLICT, "job %s is %s; its agent reads no more messages", e.JobID, status)
		}
		if err != nil {
			return err
		}
		return insertEvent(ctx, tx, e.JobID, seq, e.Type, fmtTime(t), data)
	})
	if err != nil {
		return wrapErr("append message to job "+e.JobID, err)
	}
	e.Seq = seq
	e.Time = t
	return nil
}

// eventData checks an event as AppendEvent does and returns its data as
// stored.
func eventData(e *drydock.Event) ([]byte, error) {
	if e.JobID == "" {
		return nil, drydock.Errorf(drydock.EINVALID, "event job id is required")
	}
	if e.Type == "" {
		return nil, drydock.Errorf(drydock.EINVALID, "event type is required")
	}
	if len(e.Data) > drydock.MaxEventDataBytes {
		return nil, drydock.Errorf(drydock.ETOOLARGE, "event data is %d bytes; the limit is %d", len(e.Data), drydock.MaxEventDataBytes)
	}
	if len(e.Data) == 0 {
		return []byte("null"), nil
	}
	if !json.Valid(e.Data) {
		return nil, drydock.Errorf(drydock.EINVALID, "event data is not valid JSON")
	}
	return e.Data, nil
}

// SetWaitingFor records the question the job's agent waits on.
func (s *Store) SetWaitingFor(ctx context.Context, id, owner, question string) error {
	return s.leaseUpdate(ctx, "set waiting_for", id, owner,
		`UPDATE jobs SET waiting_for = ? WHERE id = ? AND `+leaseHeld, question, id, owner)
}

// tooManyMessages refuses a message past MaxMessagesPerJob.
func tooManyMessages(id string, n int) error {
	return drydock.Errorf(drydock.ETOOLARGE, "job %s already has %d messages, the most one job takes; cancel it, or send a follow-up once it has ended", id, n)
}
