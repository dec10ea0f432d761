package postgres

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

// CreateJobOnce creates job under an idempotency key of its owner, or
// returns the job the key already names.
//
// The key row is written first: its primary key is what decides between
// concurrent requests. A twin request's INSERT ... ON CONFLICT waits on the
// uncommitted row until the first transaction ends; once it has committed,
// the twin takes the conflict branch, which replaces the row only when it
// has expired, and reads the first request's key and job in a statement of
// its own (a fresh snapshot under READ COMMITTED). If the first transaction
// rolls back, the twin inserts the key and creates the job itself.
func (s *Store) CreateJobOnce(ctx context.Context, job *drydock.Job, key drydock.IdempotencyKey) (*drydock.Job, bool, error) {
	if err := key.Check(); err != nil {
		return nil, false, err
	}
	if badKey(job.OwnerID) {
		return nil, false, drydock.Errorf(drydock.EINVALID, "job %s: owner id must be valid UTF-8 without NUL characters", job.ID)
	}
	ins, err := newJobInsert(job)
	if err != nil {
		return nil, false, err
	}
	var original *drydock.Job
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		original = nil
		var held string
		err := tx.QueryRow(ctx, `INSERT INTO idempotency_keys AS k (owner_id, key, fingerprint, job_id, created_at, expires_at)
			VALUES ($1, $2, $3, $4, now(), now() + $5 * interval '1 microsecond')
			ON CONFLICT (owner_id, key) DO UPDATE
				SET fingerprint = EXCLUDED.fingerprint, job_id = EXCLUDED.job_id,
				    created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
				WHERE k.expires_at <= now()
			RETURNING job_id`,
			job.OwnerID, key.Key, key.Fingerprint, job.ID, micros(key.TTL)).Scan(&held)
		switch {
		case err == nil:
			return ins.run(ctx, tx)
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("record idempotency key: %w", err)
		}
		// The key is held by an unexpired record.
		var (
			fp      []byte
			jobID   string
			expires time.Time
		)
		if err := tx.QueryRow(ctx, `SELECT fingerprint, job_id, expires_at FROM idempotency_keys WHERE owner_id = $1 AND key = $2`,
			job.OwnerID, key.Key).Scan(&fp, &jobID, &expires); err != nil {
			return fmt.Errorf("look up idempotency key: %w", err)
		}
		if subtle.ConstantTimeCompare(fp, key.Fingerprint) != 1 {
			return drydock.KeyReused(key.Key, expires)
		}
		original, err = scanJob(tx.QueryRow(ctx, `SELECT `+sqlstore.JobColumns+` FROM jobs WHERE id = $1`, jobID))
		if err != nil {
			return fmt.Errorf("job %s of idempotency key: %w", jobID, err)
		}
		return nil
	})
	if err != nil {
		return nil, false, sqlstore.Wrap("create job "+job.ID, err)
	}
	if original != nil {
		return original, false, nil
	}
	return job, true, nil
}

// purgeBatch bounds one purge statement, so that a large backlog is
// deleted in short transactions.
const purgeBatch = 1000

// PurgeIdempotencyKeys deletes expired keys in batches of purgeBatch. Rows
// another replica's purge holds are skipped, not waited for.
func (s *Store) PurgeIdempotencyKeys(ctx context.Context) (int, error) {
	total := 0
	for {
		tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE (owner_id, key) IN
			(SELECT owner_id, key FROM idempotency_keys WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED)`, purgeBatch)
		if err != nil {
			return total, sqlstore.Wrap("purge idempotency keys", err)
		}
		n := int(tag.RowsAffected())
		total += n
		if n < purgeBatch {
			return total, nil
		}
	}
}
