package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

// ChangePause applies c with drydock.ApplyPause to the job in one write
// transaction, with the events it records.
func (s *Store) ChangePause(ctx context.Context, id string, c drydock.PauseChange) (*drydock.Job, error) {
	var job *drydock.Job
	err := s.w.do(ctx, func(ctx context.Context, tx *wtx) error {
		j, err := scanJob(tx.QueryRowContext(ctx, `SELECT `+sqlstore.JobColumns+` FROM jobs WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return sqlstore.NotFound(id)
		}
		if err != nil {
			return err
		}
		t := now()
		recs, err := drydock.ApplyPause(j, c, t)
		if err != nil {
			return err
		}
		if len(recs) == 0 && c.Op != drydock.OpTakeControl && c.Op != drydock.OpRenewControl {
			job = j
			return nil
		}
		j, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET paused_at = ?, paused_ms = ?, pauses = ?, paused_by = ?,
			control_lease = ?, control_by = ?, control_expires_at = ?, last_seq = last_seq + ?
			WHERE id = ? RETURNING `+sqlstore.JobColumns,
			nullTimePtr(j.PausedAt), j.PausedTotal.Milliseconds(), j.Pauses, j.PausedBy,
			j.ControlLease, j.ControlBy, nullTimePtr(j.ControlExpiresAt), len(recs), id))
		if err != nil {
			return err
		}
		var last int64
		if err := tx.QueryRowContext(ctx, `SELECT last_seq FROM jobs WHERE id = ?`, id).Scan(&last); err != nil {
			return err
		}
		for i, r := range recs {
			data, err := json.Marshal(r.Data)
			if err != nil {
				return fmt.Errorf("encode %s event: %w", r.Type, err)
			}
			if err := insertEvent(ctx, tx, id, last-int64(len(recs)-1-i), r.Type, fmtTime(t), data); err != nil {
				return err
			}
		}
		job = j
		return nil
	})
	if err != nil {
		return nil, sqlstore.Wrap("change the pause of job "+id, err)
	}
	return job, nil
}
