package sqlite

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

// CreateJobOnce creates job under an idempotency key of its owner, or
// returns the job the key already names. Writes run one at a time in the
// writer, so the lookup and the inserts cannot interleave with a twin
// request's: the second of two concurrent requests finds the first's key.
func (s *Store) CreateJobOnce(ctx context.Context, job *drydock.Job, key drydock.IdempotencyKey) (*drydock.Job, bool, error) {
	if err := key.Check(); err != nil {
		return nil, false, err
	}
	ins, err := newJobInsert(job)
	if err != nil {
		return nil, false, err
	}
	var original *drydock.Job
	err = s.w.do(ctx, func(ctx context.Context, tx *wtx) error {
		original = nil
		t := fmtTime(now())
		var (
			fp             []byte
			jobID, expires string
		)
		err := tx.QueryRowContext(ctx, `SELECT fingerprint, job_id, expires_at FROM idempotency_keys WHERE owner_id = ? AND key = ?`,
			job.OwnerID, key.Key).Scan(&fp, &jobID, &expires)
		switch {
		case err == nil && expires > t:
			if subtle.ConstantTimeCompare(fp, key.Fingerprint) != 1 {
				until, err := parseTime(expires)
				if err != nil {
					return err
				}
				return drydock.KeyReused(key.Key, until)
			}
			original, err = scanJob(tx.QueryRowContext(ctx, `SELECT `+sqlstore.JobColumns+` FROM jobs WHERE id = ?`, jobID))
			if err != nil {
				return fmt.Errorf("job %s of idempotency key: %w", jobID, err)
			}
			return nil
		case err == nil:
			if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE owner_id = ? AND key = ?`, job.OwnerID, key.Key); err != nil {
				return fmt.Errorf("replace expired idempotency key: %w", err)
			}
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("look up idempotency key: %w", err)
		}
		if err := ins.run(ctx, tx); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO idempotency_keys (owner_id, key, fingerprint, job_id, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?)`,
			job.OwnerID, key.Key, key.Fingerprint, job.ID, t, fmtTime(now().Add(key.TTL)))
		if err != nil {
			return fmt.Errorf("record idempotency key: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, false, sqlstore.Wrap("create job "+job.ID, err)
	}
	if original != nil {
		return original, false, nil
	}
	ins.done()
	return job, true, nil
}

// purgeBatch bounds one purge transaction, so that a large backlog does
// not hold the single writer for long.
const purgeBatch = 1000

// PurgeIdempotencyKeys deletes expired keys in batches of purgeBatch.
func (s *Store) PurgeIdempotencyKeys(ctx context.Context) (int, error) {
	total := 0
	for {
		var n int64
		err := s.w.do(ctx, func(ctx context.Context, tx *wtx) error {
			res, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE rowid IN
				(SELECT rowid FROM idempotency_keys WHERE expires_at <= ? LIMIT ?)`, fmtTime(now()), purgeBatch)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return total, fmt.Errorf("purge idempotency keys: %w", err)
		}
		total += int(n)
		if n < purgeBatch {
			return total, nil
		}
	}
}
