package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

// AppendMessage appends e to the log of a job that has not finished; the
// status check and the append are one write, so a message can never land
// after the job's final status event.
func (s *Store) AppendMessage(ctx context.Context, e *drydock.Event) error {
	data, err := sqlstore.EventData(e)
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
			return sqlstore.TooManyMessages(e.JobID, n)
		}
		err := tx.QueryRowContext(ctx, `UPDATE jobs SET last_seq = last_seq + 1
			WHERE id = ? AND status IN ('pending', 'running') RETURNING last_seq`, e.JobID).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			var status string
			err = tx.QueryRowContext(ctx, `SELECT status FROM jobs WHERE id = ?`, e.JobID).Scan(&status)
			if errors.Is(err, sql.ErrNoRows) {
				return sqlstore.NotFound(e.JobID)
			}
			if err != nil {
				return err
			}
			return sqlstore.MessagesClosed(e.JobID, status)
		}
		if err != nil {
			return err
		}
		return insertEvent(ctx, tx, e.JobID, seq, e.Type, fmtTime(t), data)
	})
	if err != nil {
		return sqlstore.Wrap("append message to job "+e.JobID, err)
	}
	e.Seq = seq
	e.Time = t
	return nil
}

// SetWaitingFor records the question the job's agent waits on.
func (s *Store) SetWaitingFor(ctx context.Context, id, owner, question string) error {
	return s.leaseUpdate(ctx, "set waiting_for", id, owner,
		`UPDATE jobs SET waiting_for = ? WHERE id = ? AND `+leaseHeld, question, id, owner)
}
