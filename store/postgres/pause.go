package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

// ChangePause applies c with drydock.ApplyPause to the job, locked for the
// transaction, and records its events. Leases are measured on the
// database's clock, as the queue's are, so replicas with skewed clocks
// agree on when a control lease expires.
func (s *Store) ChangePause(ctx context.Context, id string, c drydock.PauseChange) (*drydock.Job, error) {
	if badKey(id) {
		return nil, sqlstore.NotFound(id)
	}
	var job *drydock.Job
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		j, err := scanJob(tx.QueryRow(ctx, `SELECT `+sqlstore.JobColumns+` FROM jobs WHERE id = $1 FOR UPDATE`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return sqlstore.NotFound(id)
		}
		if err != nil {
			return err
		}
		var t time.Time
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&t); err != nil {
			return err
		}
		t = t.UTC().Truncate(time.Microsecond)
		recs, err := drydock.ApplyPause(j, c, t)
		if err != nil {
			return err
		}
		if len(recs) == 0 && c.Op != drydock.OpTakeControl && c.Op != drydock.OpRenewControl {
			job = j
			return nil
		}
		var last int64
		err = tx.QueryRow(ctx, `UPDATE jobs SET paused_at = $2, paused_ms = $3, paused_by = $4,
			control_lease = $5, control_by = $6, control_expires_at = $7, last_seq = last_seq + $8, pauses = $9
			WHERE id = $1 RETURNING last_seq`,
			id, j.PausedAt, j.PausedTotal.Milliseconds(), cleanText(j.PausedBy),
			cleanText(j.ControlLease), cleanText(j.ControlBy), j.ControlExpiresAt, len(recs), j.Pauses).Scan(&last)
		if err != nil {
			return err
		}
		for i, r := range recs {
			data, err := json.Marshal(r.Data)
			if err != nil {
				return fmt.Errorf("encode %s event: %w", r.Type, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO events (job_id, seq, type, time, data) VALUES ($1, $2, $3, $4, $5::json)`,
				id, last-int64(len(recs)-1-i), string(r.Type), t, string(data)); err != nil {
				return err
			}
		}
		job, err = scanJob(tx.QueryRow(ctx, `SELECT `+sqlstore.JobColumns+` FROM jobs WHERE id = $1`, id))
		return err
	})
	if err != nil {
		return nil, sqlstore.Wrap("change the pause of job "+id, err)
	}
	return job, nil
}
