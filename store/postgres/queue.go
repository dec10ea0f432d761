package postgres

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

// The queue is the jobs table itself: a worker holds a job while lease_owner
// is its name and lease_expires_at is in the future. Every replica claims
// from the same table; row locks, not a single writer, keep two claimers off
// one job.
//
// Lease times come from the database clock (now()), never from the
// replica's: whether a lease has run out is decided by one clock however
// far apart the replicas' clocks drift. now() is the start of the
// transaction, and every statement here is its own short transaction.

// claimQuery leases the runnable job created first. Each candidate query
// walks its own index in queue order and skips rows another transaction has
// locked (a concurrent claim, cancel or append), so claimers never wait for
// each other and never take the same job; the older of the two candidates
// wins and the other's lock ends with the statement.
const claimQuery = `WITH pending AS (
		SELECT id, created_at FROM jobs
		WHERE status = 'pending' AND NOT cancel_requested
		ORDER BY created_at, id LIMIT 1
		FOR UPDATE SKIP LOCKED
	), expired AS (
		SELECT id, created_at FROM jobs
		WHERE status = 'running' AND lease_expires_at < now()
		ORDER BY created_at, id LIMIT 1
		FOR UPDATE SKIP LOCKED
	), pick AS (
		SELECT id AS pick_id FROM (SELECT * FROM pending UNION ALL SELECT * FROM expired) c
		ORDER BY created_at, id LIMIT 1
	)
	UPDATE jobs SET status = 'running', started_at = COALESCE(started_at, now()),
		lease_owner = $1, lease_expires_at = now() + $2::bigint * interval '1 microsecond',
		attempts = attempts + 1
	FROM pick WHERE id = pick_id
	RETURNING ` + sqlstore.JobColumns

// ClaimJob leases the runnable job created first: a pending one, or a running
// one whose lease expired. It returns nil, nil when there is none, or when
// every runnable job is being claimed by someone else at this instant.
func (s *Store) ClaimJob(ctx context.Context, owner string, ttl time.Duration) (*drydock.Job, error) {
	if err := sqlstore.CheckClaim(owner, ttl); err != nil {
		return nil, err
	}
	if badKey(owner) {
		return nil, drydock.Errorf(drydock.EINVALID, "lease owner must be valid UTF-8 without NUL characters")
	}
	j, err := scanJob(s.pool.QueryRow(ctx, claimQuery, owner, micros(ttl)))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, sqlstore.Wrap("claim job", err)
	}
	return j, nil
}

// leaseHeld matches the job (id is $1) while the owner ($2) holds its lease.
// A released lease has no owner, and "" owns nothing.
const leaseHeld = `id = $1 AND status = 'running' AND lease_owner <> '' AND lease_owner = $2`

// leaseLost tells apart the two reasons a lease-guarded update matched no
// row: the job does not exist, or owner does not hold it.
func (s *Store) leaseLost(ctx context.Context, id, owner string) error {
	var status string
	err := s.pool.QueryRow(ctx, `SELECT status FROM jobs WHERE id = $1`, id).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
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
	if badKey(id) {
		return nil, sqlstore.NotFound(id)
	}
	j, err := scanJob(s.pool.QueryRow(ctx, `UPDATE jobs SET lease_expires_at = now() + $3::bigint * interval '1 microsecond'
		WHERE `+leaseHeld+` RETURNING `+sqlstore.JobColumns, id, owner, micros(ttl)))
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.leaseLost(ctx, id, owner)
	}
	if err != nil {
		return nil, sqlstore.Wrap("renew lease of job "+id, err)
	}
	return j, nil
}

// leaseUpdate runs an UPDATE guarded by leaseHeld ($1 id, $2 owner).
func (s *Store) leaseUpdate(ctx context.Context, op, id, owner, query string, args ...any) error {
	if badKey(id) {
		return sqlstore.NotFound(id)
	}
	tag, err := s.pool.Exec(ctx, query, append([]any{id, owner}, args...)...)
	if err == nil && tag.RowsAffected() == 0 {
		err = s.leaseLost(ctx, id, owner)
	}
	return sqlstore.Wrap(op+" of job "+id, err)
}

// expiredNow is a lease expiry that is already over: any claim from now on
// sees it expired, and it still records roughly when the lease was given up.
const expiredNow = `now() - interval '1 microsecond'`

// ReleaseLease ends owner's lease now; the job stays running until the next
// claimer takes it over. The owner is cleared, so a late heartbeat from the
// releasing worker gets ELEASELOST instead of taking the lease back.
func (s *Store) ReleaseLease(ctx context.Context, id, owner string) error {
	return s.leaseUpdate(ctx, "release lease", id, owner,
		`UPDATE jobs SET lease_owner = '', lease_expires_at = `+expiredNow+` WHERE `+leaseHeld)
}

// ExpireLeases releases, as ReleaseLease does, the leases of running jobs
// whose owner starts with prefix (compared exactly, case and all), except
// keep's, whether or not they already ran out.
func (s *Store) ExpireLeases(ctx context.Context, prefix, keep string) (int, error) {
	if badKey(prefix) {
		return 0, nil // no owner starts with it
	}
	// left() rather than LIKE, which would read '%' and '_' in the prefix as
	// wildcards.
	tag, err := s.pool.Exec(ctx, `UPDATE jobs SET lease_owner = '', lease_expires_at = `+expiredNow+`
		WHERE status = 'running' AND lease_owner <> '' AND lease_owner <> $2
			AND left(lease_owner, length($1::text)) = $1::text`,
		prefix, keep)
	if err != nil {
		return 0, sqlstore.Wrap("expire leases", err)
	}
	return int(tag.RowsAffected()), nil
}

// UpdateProgress stores the totals a worker reports.
func (s *Store) UpdateProgress(ctx context.Context, id, owner string, p drydock.JobProgress) error {
	var sandbox, isolation *string
	if p.SandboxID != nil {
		sb := cleanText(*p.SandboxID)
		sandbox = &sb
	}
	if p.Isolation != nil {
		is := cleanText(*p.Isolation)
		isolation = &is
	}
	return s.leaseUpdate(ctx, "update progress", id, owner, `UPDATE jobs SET steps = $3,
			input_tokens = $4, output_tokens = $5, cache_read_tokens = $6, cache_write_tokens = $7, cost_usd = $8,
			sandbox_id = COALESCE($9, sandbox_id), isolation = COALESCE($10, isolation)
		WHERE `+leaseHeld,
		p.Steps, p.Usage.InputTokens, p.Usage.OutputTokens, p.Usage.CacheReadTokens, p.Usage.CacheWriteTokens,
		p.Usage.CostUSD, sandbox, isolation)
}

// cleanText makes a string the server produced (an error, a summary)
// storable in a text column: Postgres text holds no NUL bytes nor invalid
// UTF-8, and a job must be able to end whatever its agent printed.
// Each offending byte becomes U+FFFD, as encoding/json does for bad UTF-8.
func cleanText(s string) string {
	if !badKey(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// FinishJob ends a running job owned by owner and logs the transition, in
// one statement: status, lease drop and status event commit together.
func (s *Store) FinishJob(ctx context.Context, id, owner string, r drydock.JobResult) error {
	if err := sqlstore.CheckFinish(r.Status); err != nil {
		return err
	}
	if badKey(id) {
		return sqlstore.NotFound(id)
	}
	r.Error, r.Summary, r.ArtifactKey = cleanText(r.Error), cleanText(r.Summary), cleanText(r.ArtifactKey)
	data := string(sqlstore.StatusData(r.Status, r.Error))
	var seq int64
	err := s.pool.QueryRow(ctx, `WITH j AS (
			UPDATE jobs SET status = $3, error = $4, summary = $5, finished_at = now(),
				artifact_key = CASE WHEN $6::text = '' THEN artifact_key ELSE $6::text END,
				artifact_size = CASE WHEN $6::text = '' THEN artifact_size ELSE $7::bigint END,
				lease_owner = '', lease_expires_at = NULL, last_seq = last_seq + 1,
				secrets_sealed = CASE WHEN $10::boolean THEN secrets_sealed ELSE NULL END,
				waiting_for = '',
				pushed_commit = $9
			WHERE `+leaseHeld+`
			RETURNING id, last_seq, finished_at)
		INSERT INTO events (job_id, seq, type, time, data)
		SELECT id, last_seq, 'status', finished_at, $8::json FROM j
		RETURNING seq`,
		id, owner, string(r.Status), r.Error, r.Summary, r.ArtifactKey, r.ArtifactSize, data,
		cleanText(r.PushedCommit), r.KeepSecrets).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.leaseLost(ctx, id, owner)
	}
	return sqlstore.Wrap("finish job "+id, err)
}

// SetArtifact records the archived workspace of a job in any state.
func (s *Store) SetArtifact(ctx context.Context, id, key string, size int64) error {
	if badKey(id) {
		return sqlstore.NotFound(id)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE jobs SET artifact_key = $2, artifact_size = $3 WHERE id = $1`,
		id, cleanText(key), size)
	if err == nil && tag.RowsAffected() == 0 {
		err = sqlstore.NotFound(id)
	}
	return sqlstore.Wrap("set artifact of job "+id, err)
}

// cancelledEvent is the data of the event of a pending job's cancel.
var cancelledEvent = string(sqlstore.StatusData(drydock.StatusCancelled, ""))

// CancelJob cancels a pending job, flags a running one, and leaves a finished
// one alone. The job row stays locked from the read to the commit, so a
// concurrent claim either took the job before (it is flagged) or skips it.
func (s *Store) CancelJob(ctx context.Context, id string) (*drydock.Job, error) {
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
		switch j.Status {
		case drydock.StatusPending:
			j, err = scanJob(tx.QueryRow(ctx, `WITH j AS (
					UPDATE jobs SET status = 'cancelled', finished_at = now(), cancel_requested = TRUE,
						last_seq = last_seq + 1, secrets_sealed = NULL
					WHERE id = $1 RETURNING *
				), e AS (
					INSERT INTO events (job_id, seq, type, time, data)
					SELECT id, last_seq, 'status', finished_at, $2::json FROM j
				)
				SELECT `+sqlstore.JobColumns+` FROM j`, id, cancelledEvent))
			if err != nil {
				return err
			}
		case drydock.StatusRunning:
			if !j.CancelRequested {
				j, err = scanJob(tx.QueryRow(ctx, `UPDATE jobs SET cancel_requested = TRUE
					WHERE id = $1 RETURNING `+sqlstore.JobColumns, id))
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
	if badKey(id) {
		return nil, sqlstore.NotFound(id)
	}
	list, err := sqlstore.ListJSON("egress", egress)
	if err != nil {
		return nil, err
	}
	job, err := scanJob(s.pool.QueryRow(ctx, `UPDATE jobs SET egress = $2, egress_source = 'job'
		WHERE id = $1 AND status IN ('pending', 'running') RETURNING `+sqlstore.JobColumns, id, list))
	if errors.Is(err, pgx.ErrNoRows) {
		var status string
		err = s.pool.QueryRow(ctx, `SELECT status FROM jobs WHERE id = $1`, id).Scan(&status)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			err = sqlstore.NotFound(id)
		case err == nil:
			err = sqlstore.EgressFixed(id, status)
		}
	}
	if err != nil {
		return nil, sqlstore.Wrap("set egress of job "+id, err)
	}
	return job, nil
}
