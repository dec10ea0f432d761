package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

// The queue is the jobs table itself: a worker holds a job while
// lease_owner is its name and lease_expires_at is in the future. Claims run
// in the single writer, so two claimers can never pick the same row.

// ClaimJob leases the runnable job created first: a pending one, or a running
// one whose lease expired.
func (s *Store) ClaimJob(ctx context.Context, owner string, ttl time.Duration) (*drydock.Job, error) {
	if err := sqlstore.CheckClaim(owner, ttl); err != nil {
		return nil, err
	}
	var job *drydock.Job
	err := s.w.do(ctx, func(ctx context.Context, tx *wtx) error {
		job = nil
		t := now()
		id, err := claimCandidate(ctx, tx, fmtTime(t))
		if err != nil || id == "" {
			return err
		}
		j, err := scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET
				status = 'running', started_at = COALESCE(started_at, ?),
				lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1
			WHERE id = ? RETURNING `+sqlstore.JobColumns,
			fmtTime(t), owner, fmtTime(t.Add(ttl)), id))
		if err != nil {
			return err
		}
		job = j
		return nil
	})
	if err != nil {
		return nil, sqlstore.Wrap("claim job", err)
	}
	return job, nil
}

// claimCandidate returns the id of the job to claim, or "".
func claimCandidate(ctx context.Context, tx *wtx, now string) (string, error) {
	var pendingID, pendingCreated, expiredID, expiredCreated string
	err := tx.QueryRowContext(ctx, `SELECT id, created_at FROM jobs
		WHERE status = 'pending' AND NOT cancel_requested
		ORDER BY created_at, id LIMIT 1`).Scan(&pendingID, &pendingCreated)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	err = tx.QueryRowContext(ctx, `SELECT id, created_at FROM jobs
		WHERE status = 'running' AND lease_expires_at < ?
		ORDER BY created_at, id LIMIT 1`, now).Scan(&expiredID, &expiredCreated)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	switch {
	case expiredID == "":
		return pendingID, nil
	case pendingID == "":
		return expiredID, nil
	case expiredCreated < pendingCreated || (expiredCreated == pendingCreated && expiredID < pendingID):
		return expiredID, nil
	}
	return pendingID, nil
}

// leaseHeld matches the job (its last parameter is the owner) while that
// owner holds its lease. A released lease has no owner, and "" owns nothing.
const leaseHeld = `status = 'running' AND lease_owner <> '' AND lease_owner = ?`

// leaseLost tells apart the two reasons a lease-guarded update matched no
// row: the job does not exist, or owner does not hold it.
func leaseLost(ctx context.Context, tx *wtx, id, owner string) error {
	var status, holder string
	err := tx.QueryRowContext(ctx, `SELECT status, lease_owner FROM jobs WHERE id = ?`, id).Scan(&status, &holder)
	if errors.Is(err, sql.ErrNoRows) {
		return sqlstore.NotFound(id)
	}
	if err != nil {
		return err
	}
	return sqlstore.LeaseLost(id, status, owner)
}

// RenewLease extends owner's lease to now+ttl and returns the job.
func (s *Store) RenewLease(ctx context.Context, id, owner string, ttl time.Duration) (*drydock.Job, error) {
	if err := sqlstore.CheckTTL(ttl); err != nil {
		return nil, err
	}
	var job *drydock.Job
	err := s.w.do(ctx, func(ctx context.Context, tx *wtx) error {
		j, err := scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET lease_expires_at = ?
			WHERE id = ? AND `+leaseHeld+` RETURNING `+sqlstore.JobColumns,
			fmtTime(now().Add(ttl)), id, owner))
		if errors.Is(err, sql.ErrNoRows) {
			return leaseLost(ctx, tx, id, owner)
		}
		job = j
		return err
	})
	if err != nil {
		return nil, sqlstore.Wrap("renew lease of job "+id, err)
	}
	return job, nil
}

// leaseUpdate runs an UPDATE guarded by "owner holds the lease on id" (its
// last two parameters must be id and owner).
func (s *Store) leaseUpdate(ctx context.Context, op, id, owner, query string, args ...any) error {
	err := s.w.do(ctx, func(ctx context.Context, tx *wtx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return leaseLost(ctx, tx, id, owner)
		}
		return nil
	})
	return sqlstore.Wrap(op+" of job "+id, err)
}

// past is a lease expiry that is already over: any claim from now on sees it
// expired, and it still records roughly when the lease was given up.
func past() string { return fmtTime(now().Add(-time.Microsecond)) }

// ReleaseLease ends owner's lease now; the job stays running until the next
// claimer takes it over. The owner is cleared, so a late heartbeat from the
// releasing worker gets ELEASELOST instead of taking the lease back.
func (s *Store) ReleaseLease(ctx context.Context, id, owner string) error {
	return s.leaseUpdate(ctx, "release lease", id, owner,
		`UPDATE jobs SET lease_owner = '', lease_expires_at = ? WHERE id = ? AND `+leaseHeld,
		past(), id, owner)
}

// ExpireLeases releases, as ReleaseLease does, the leases of running jobs
// whose owner starts with prefix (compared exactly, case and all), except
// keep's, whether or not they already ran out.
func (s *Store) ExpireLeases(ctx context.Context, prefix, keep string) (int, error) {
	var n int64
	err := s.w.do(ctx, func(ctx context.Context, tx *wtx) error {
		// substr rather than LIKE: LIKE folds ASCII case in SQLite and treats
		// '%' and '_' in the prefix as wildcards.
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET lease_owner = '', lease_expires_at = ?
			WHERE status = 'running' AND lease_owner <> '' AND lease_owner <> ?
				AND substr(lease_owner, 1, length(?)) = ?`,
			past(), keep, prefix, prefix)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, sqlstore.Wrap("expire leases", err)
	}
	return int(n), nil
}

// UpdateProgress stores the totals a worker reports.
func (s *Store) UpdateProgress(ctx context.Context, id, owner string, p drydock.JobProgress) error {
	var sandbox, isolation any
	if p.SandboxID != nil {
		sandbox = *p.SandboxID
	}
	if p.Isolation != nil {
		isolation = *p.Isolation
	}
	return s.leaseUpdate(ctx, "update progress", id, owner, `UPDATE jobs SET steps = ?,
			input_tokens = ?, output_tokens = ?, cache_read_tokens = ?, cache_write_tokens = ?, cost_usd = ?,
			sandbox_id = COALESCE(?, sandbox_id), isolation = COALESCE(?, isolation)
		WHERE id = ? AND `+leaseHeld,
		p.Steps, p.Usage.InputTokens, p.Usage.OutputTokens, p.Usage.CacheReadTokens, p.Usage.CacheWriteTokens,
		p.Usage.CostUSD, sandbox, isolation, id, owner)
}

// FinishJob ends a running job owned by owner and logs the transition.
func (s *Store) FinishJob(ctx context.Context, id, owner string, r drydock.JobResult) error {
	if err := sqlstore.CheckFinish(r.Status); err != nil {
		return err
	}
	data := sqlstore.StatusData(r.Status, r.Error)
	err := s.w.do(ctx, func(ctx context.Context, tx *wtx) error {
		t := fmtTime(now())
		var seq int64
		err := tx.QueryRowContext(ctx, `UPDATE jobs SET status = ?, error = ?, summary = ?, finished_at = ?,
				artifact_key = CASE WHEN ? = '' THEN artifact_key ELSE ? END,
				artifact_size = CASE WHEN ? = '' THEN artifact_size ELSE ? END,
				lease_owner = '', lease_expires_at = NULL, last_seq = last_seq + 1,
				secrets_sealed = CASE WHEN ? THEN secrets_sealed ELSE NULL END,
				waiting_for = '',
				pushed_commit = ?
			WHERE id = ? AND `+leaseHeld+` RETURNING last_seq`,
			string(r.Status), r.Error, r.Summary, t,
			r.ArtifactKey, r.ArtifactKey, r.ArtifactKey, r.ArtifactSize,
			r.KeepSecrets,
			r.PushedCommit,
			id, owner).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return leaseLost(ctx, tx, id, owner)
		}
		if err != nil {
			return err
		}
		return insertEvent(ctx, tx, id, seq, drydock.EventStatus, t, data)
	})
	return sqlstore.Wrap("finish job "+id, err)
}

// SetArtifact records the archived workspace of a job in any state.
func (s *Store) SetArtifact(ctx context.Context, id, key string, size int64) error {
	err := s.w.do(ctx, func(ctx context.Context, tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET artifact_key = ?, artifact_size = ? WHERE id = ?`, key, size, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return sqlstore.NotFound(id)
		}
		return nil
	})
	return sqlstore.Wrap("set artifact of job "+id, err)
}

// CancelJob cancels a pending job, flags a running one, and leaves a finished
// one alone.
func (s *Store) CancelJob(ctx context.Context, id string) (*drydock.Job, error) {
	data := sqlstore.StatusData(drydock.StatusCancelled, "")
	var job *drydock.Job
	err := s.w.do(ctx, func(ctx context.Context, tx *wtx) error {
		j, err := scanJob(tx.QueryRowContext(ctx, `SELECT `+sqlstore.JobColumns+` FROM jobs WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return sqlstore.NotFound(id)
		}
		if err != nil {
			return err
		}
		switch j.Status {
		case drydock.StatusPending:
			t := fmtTime(now())
			j, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET status = 'cancelled', finished_at = ?,
				cancel_requested = TRUE, last_seq = last_seq + 1, secrets_sealed = NULL WHERE id = ? RETURNING `+sqlstore.JobColumns, t, id))
			if err != nil {
				return err
			}
			var seq int64
			if err := tx.QueryRowContext(ctx, `SELECT last_seq FROM jobs WHERE id = ?`, id).Scan(&seq); err != nil {
				return err
			}
			if err := insertEvent(ctx, tx, id, seq, drydock.EventStatus, t, data); err != nil {
				return err
			}
		case drydock.StatusRunning:
			if !j.CancelRequested {
				j, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET cancel_requested = TRUE
					WHERE id = ? RETURNING `+sqlstore.JobColumns, id))
				if err != nil {
					return err
				}
			}
		}
		job = j
		return nil
	})
	if err != nil {
		return nil, sqlstore.Wrap("cancel job "+id, err)
	}
	return job, nil
}

// SetEgress replaces the allowlist of a job that has not finished.
func (s *Store) SetEgress(ctx context.Context, id string, egress []string) (*drydock.Job, error) {
	list, err := sqlstore.ListJSON("egress", egress)
	if err != nil {
		return nil, err
	}
	var job *drydock.Job
	err = s.w.do(ctx, func(ctx context.Context, tx *wtx) error {
		var status string
		err := tx.QueryRowContext(ctx, `SELECT status FROM jobs WHERE id = ?`, id).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return sqlstore.NotFound(id)
		}
		if err != nil {
			return err
		}
		if drydock.JobStatus(status).Terminal() {
			return sqlstore.EgressFixed(id, status)
		}
		job, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET egress = ?, egress_source = 'job' WHERE id = ? RETURNING `+sqlstore.JobColumns, list, id))
		return err
	})
	if err != nil {
		return nil, sqlstore.Wrap("set egress of job "+id, err)
	}
	return job, nil
}
