package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

// AppendEvent numbers e after its job's newest event and stores it. It sets
// e.Seq, and e.Time when zero; Time is rounded to microseconds.
func (s *Store) AppendEvent(ctx context.Context, e *drydock.Event) error {
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
		// The increment locks the job row (on Postgres; SQLite has one
		// writer anyway), so seqs come out gapless in commit order.
		err := tx.QueryRowContext(ctx, `UPDATE jobs SET last_seq = last_seq + 1 WHERE id = ? RETURNING last_seq`,
			e.JobID).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return sqlstore.NotFound(e.JobID)
		}
		if err != nil {
			return err
		}
		return insertEvent(ctx, tx, e.JobID, seq, e.Type, fmtTime(t), data)
	})
	if err != nil {
		return sqlstore.Wrap("append event to job "+e.JobID, err)
	}
	e.Seq = seq
	e.Time = t
	return nil
}

func insertEvent(ctx context.Context, tx *wtx, jobID string, seq int64, typ drydock.EventType, t string, data []byte) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO events (job_id, seq, type, time, data) VALUES (?, ?, ?, ?, ?)`,
		jobID, seq, string(typ), t, string(data))
	return err
}

// ListEvents returns up to limit events of jobID with Seq > after, in order.
// A job without such events gives an empty list; a missing job, ENOTFOUND.
func (s *Store) ListEvents(ctx context.Context, jobID string, after int64, limit int) ([]*drydock.Event, error) {
	limit = sqlstore.EventLimit(limit)
	q, err := s.reads.get(ctx, `SELECT seq, type, time, data FROM events
		WHERE job_id = ? AND seq > ? ORDER BY seq LIMIT ?`)
	if err != nil {
		return nil, fmt.Errorf("list events of job %s: %w", jobID, err)
	}
	rows, err := q.QueryContext(ctx, jobID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list events of job %s: %w", jobID, err)
	}
	defer rows.Close()
	events := make([]*drydock.Event, 0)
	for rows.Next() {
		var (
			e    = drydock.Event{JobID: jobID}
			typ  string
			t    string
			data string
		)
		if err := rows.Scan(&e.Seq, &typ, &t, &data); err != nil {
			return nil, fmt.Errorf("list events of job %s: %w", jobID, err)
		}
		e.Type = drydock.EventType(typ)
		if e.Time, err = parseTime(t); err != nil {
			return nil, fmt.Errorf("list events of job %s: %w", jobID, err)
		}
		e.Data = json.RawMessage(data)
		events = append(events, &e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list events of job %s: %w", jobID, err)
	}
	// Jobs are never deleted, so checking after the list cannot miss one.
	if len(events) == 0 {
		var one int
		err := s.reads.queryRow(ctx, `SELECT 1 FROM jobs WHERE id = ?`, jobID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, sqlstore.NotFound(jobID)
		}
		if err != nil {
			return nil, fmt.Errorf("list events of job %s: %w", jobID, err)
		}
	}
	return events, nil
}
