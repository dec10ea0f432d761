package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

// eventData checks an event as both appends do and returns its data as
// stored; a job id Postgres text cannot hold names no job.
func eventData(e *drydock.Event) (string, error) {
	b, err := sqlstore.EventData(e)
	if err != nil {
		return "", err
	}
	if badKey(e.JobID) {
		return "", sqlstore.NotFound(e.JobID)
	}
	return string(b), nil
}

// AppendEvent numbers e after its job's newest event and stores it, in one
// statement. It sets e.Seq, and e.Time when zero (from the database clock);
// Time is rounded to microseconds.
func (s *Store) AppendEvent(ctx context.Context, e *drydock.Event) error {
	data, err := eventData(e)
	if err != nil {
		return err
	}
	var (
		seq int64
		t   time.Time
	)
	// The increment locks the job row until the commit, so concurrent
	// appends to one job (from any replica) take seqs one after the other
	// and commit in seq order: a reader never sees seq n+1 without n.
	err = s.pool.QueryRow(ctx, `WITH j AS (
			UPDATE jobs SET last_seq = last_seq + 1 WHERE id = $1 RETURNING id, last_seq)
		INSERT INTO events (job_id, seq, type, time, data)
		SELECT id, last_seq, $2::text, COALESCE($3::timestamptz, now()), $4::json FROM j
		RETURNING seq, time`,
		e.JobID, cleanText(string(e.Type)), dbTime(e.Time), data).Scan(&seq, &t)
	if errors.Is(err, pgx.ErrNoRows) {
		return sqlstore.NotFound(e.JobID)
	}
	if err != nil {
		return sqlstore.Wrap("append event to job "+e.JobID, err)
	}
	e.Seq = seq
	e.Time = t.UTC()
	return nil
}

// ListEvents returns up to limit events of jobID with Seq > after, in order.
// A job without such events gives an empty list; a missing job, ENOTFOUND.
func (s *Store) ListEvents(ctx context.Context, jobID string, after int64, limit int) ([]*drydock.Event, error) {
	limit = sqlstore.EventLimit(limit)
	if badKey(jobID) {
		return nil, sqlstore.NotFound(jobID)
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, type, time, data FROM events
		WHERE job_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, jobID, after, limit)
	if err != nil {
		return nil, sqlstore.Wrap("list events of job "+jobID, err)
	}
	defer rows.Close()
	events := make([]*drydock.Event, 0)
	for rows.Next() {
		var (
			e    = drydock.Event{JobID: jobID}
			typ  string
			data []byte
		)
		if err := rows.Scan(&e.Seq, &typ, &e.Time, &data); err != nil {
			return nil, sqlstore.Wrap("list events of job "+jobID, err)
		}
		e.Type = drydock.EventType(typ)
		e.Time = e.Time.UTC()
		e.Data = json.RawMessage(data)
		events = append(events, &e)
	}
	if err := rows.Err(); err != nil {
		return nil, sqlstore.Wrap("list events of job "+jobID, err)
	}
	// Jobs are never deleted, so checking after the list cannot miss one.
	if len(events) == 0 {
		var one int
		err := s.pool.QueryRow(ctx, `SELECT 1 FROM jobs WHERE id = $1`, jobID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, sqlstore.NotFound(jobID)
		}
		if err != nil {
			return nil, sqlstore.Wrap("list events of job "+jobID, err)
		}
	}
	return events, nil
}
