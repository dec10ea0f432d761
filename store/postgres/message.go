package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

// AppendMessage appends e to the log of a job that has not finished, in one
// statement: the status check and the seq increment lock the same row, so a
// message can never land after the job's final status event.
func (s *Store) AppendMessage(ctx context.Context, e *drydock.Event) error {
	data, err := eventData(e)
	if err != nil {
		return err
	}
	var (
		seq int64
		t   time.Time
	)
	err = s.pool.QueryRow(ctx, `WITH j AS (
			UPDATE jobs SET last_seq = last_seq + 1 WHERE id = $1 AND status IN ('pending', 'running')
				AND (SELECT count(*) FROM events WHERE job_id = $1 AND type = $2::text) < $5
			RETURNING id, last_seq)
		INSERT INTO events (job_id, seq, type, time, data)
		SELECT id, last_seq, $2::text, COALESCE($3::timestamptz, now()), $4::json FROM j
		RETURNING seq, time`,
		e.JobID, cleanText(string(e.Type)), dbTime(e.Time), data, drydock.MaxMessagesPerJob).Scan(&seq, &t)
	if errors.Is(err, pgx.ErrNoRows) {
		var (
			status string
			n      int
		)
		err = s.pool.QueryRow(ctx, `SELECT status, (SELECT count(*) FROM events WHERE job_id = $1 AND type = $2::text)
			FROM jobs WHERE id = $1`, e.JobID, cleanText(string(e.Type))).Scan(&status, &n)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			err = sqlstore.NotFound(e.JobID)
		case err == nil && (status == "pending" || status == "running") && n >= drydock.MaxMessagesPerJob:
			err = sqlstore.TooManyMessages(e.JobID, n)
		case err == nil:
			err = sqlstore.MessagesClosed(e.JobID, status)
		}
	}
	if err != nil {
		return sqlstore.Wrap("append message to job "+e.JobID, err)
	}
	e.Seq = seq
	e.Time = t.UTC()
	return nil
}

// SetWaitingFor records the question the job's agent waits on.
func (s *Store) SetWaitingFor(ctx context.Context, id, owner, question string) error {
	return s.leaseUpdate(ctx, "set waiting_for", id, owner,
		`UPDATE jobs SET waiting_for = $3 WHERE `+leaseHeld, cleanText(question))
}
