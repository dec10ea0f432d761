package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

// listColumns is sqlstore.JobColumns without the sealed secrets, which only
// the worker that runs a job needs (up to 128 KiB a job).
var listColumns = strings.Replace(sqlstore.JobColumns, "secrets_sealed", "NULL::bytea", 1)

func scanJob(row pgx.Row) (*drydock.Job, error) {
	var (
		r                               sqlstore.JobRow
		started, finished, leaseExpires *time.Time
		pausedAt, controlExpires        *time.Time
	)
	err := row.Scan(r.Dest(sqlstore.JobTimes{
		Created: &r.Job.CreatedAt, Started: &started, Finished: &finished, LeaseExpires: &leaseExpires,
		PausedAt: &pausedAt, ControlExpires: &controlExpires,
	})...)
	if err != nil {
		return nil, err
	}
	j := &r.Job
	j.PausedAt, j.ControlExpiresAt = utc(pausedAt), utc(controlExpires)
	j.CreatedAt = j.CreatedAt.UTC()
	j.StartedAt = utc(started)
	j.FinishedAt = utc(finished)
	if leaseExpires != nil {
		j.LeaseExpiresAt = leaseExpires.UTC()
	}
	return r.Decode()
}

// pendingEvent is the data of every job's first event.
var pendingEvent = string(sqlstore.StatusData(drydock.StatusPending, ""))

// CreateJob stores job as pending with its first status event, in one
// statement (so one round trip and one commit). It sets job.Status, and
// job.CreatedAt when zero (from the database clock), and rounds CreatedAt to
// microseconds.
func (s *Store) CreateJob(ctx context.Context, job *drydock.Job) error {
	ins, err := newJobInsert(job)
	if err != nil {
		return err
	}
	return ins.run(ctx, s.pool)
}

// jobInsert is a new job encoded for the INSERT, so that encoding errors
// are found before the database is asked.
type jobInsert struct {
	job  *drydock.Job
	cols sqlstore.JobJSON
}

func newJobInsert(job *drydock.Job) (*jobInsert, error) {
	cols, err := sqlstore.NewJob(job)
	if err != nil {
		return nil, err
	}
	return &jobInsert{job: job, cols: cols}, nil
}

// queryRower is the pool or a transaction.
type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// run inserts the job and its first event, and on success sets the job's
// stored state.
func (ins *jobInsert) run(ctx context.Context, q queryRower) error {
	job := ins.job
	var created time.Time
	err := q.QueryRow(ctx, `WITH j AS (
			INSERT INTO jobs (id, owner_id, status, created_at, task, model, max_steps, timeout_ms, profile, metadata, context_budget, egress,
				secret_names, secrets_sealed,
				input_key, input_size, last_seq, egress_source,
				repo,
				interactive, parent_job_id, agent)
			VALUES ($1, $2, 'pending', COALESCE($3, now()), $4, $5, $6, $7, $8, $9, $11, $12, $13, $14, $15, $16, 1, $17,
				$18,
				$19, $20, $21)
			RETURNING id, created_at)
		INSERT INTO events (job_id, seq, type, time, data)
		SELECT id, 1, 'status', created_at, $10 FROM j
		RETURNING time`,
		job.ID, job.OwnerID, dbTime(job.CreatedAt), job.Task, job.Model, job.MaxSteps,
		time.Duration(job.Timeout).Milliseconds(), string(job.Profile), ins.cols.Metadata, pendingEvent, job.ContextBudget, ins.cols.Egress,
		ins.cols.SecretNames, job.SealedSecrets,
		job.InputKey, job.InputSize, job.EgressSource,
		ins.cols.Repo,
		job.Interactive, job.ParentJobID, job.Agent).Scan(&created)
	switch {
	case isUnique(err):
		return sqlstore.Exists(job.ID)
	case isBadText(err):
		return drydock.Errorf(drydock.EINVALID, "job %s: text fields must be valid UTF-8 without NUL characters", job.ID)
	case err != nil:
		return sqlstore.Wrap("create job "+job.ID, err)
	}
	job.Status = drydock.StatusPending
	job.CreatedAt = created.UTC()
	return nil
}

// GetJob returns the job or ENOTFOUND.
func (s *Store) GetJob(ctx context.Context, id string) (*drydock.Job, error) {
	if badKey(id) {
		return nil, sqlstore.NotFound(id)
	}
	j, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+sqlstore.JobColumns+` FROM jobs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, sqlstore.NotFound(id)
	}
	if err != nil {
		return nil, sqlstore.Wrap("get job "+id, err)
	}
	return j, nil
}

// ListJobs pages through jobs by descending id: ids are UUIDv7, so this is
// newest first, and the cursor is the last id of the page, in
// sqlstore's form, so it means the same whichever store issued it.
func (s *Store) ListJobs(ctx context.Context, f drydock.JobFilter) ([]*drydock.Job, string, error) {
	limit := sqlstore.ListLimit(f.Limit)

	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.OwnerID != "" {
		where = append(where, "owner_id = "+arg(f.OwnerID))
	}
	if len(f.Status) > 0 {
		statuses, err := sqlstore.Statuses(f.Status)
		if err != nil {
			return nil, "", err
		}
		where = append(where, "status = ANY("+arg(statuses)+")")
	}
	if len(f.Metadata) > 0 {
		b, err := json.Marshal(f.Metadata)
		if err != nil {
			return nil, "", fmt.Errorf("list jobs: encode the metadata filter: %w", err)
		}
		where = append(where, "metadata @> "+arg(string(b))+"::jsonb")
	}
	if f.Cursor != "" {
		after, err := sqlstore.DecodeCursor(f.Cursor)
		if err == nil && badKey(after) {
			err = sqlstore.InvalidCursor()
		}
		if err != nil {
			return nil, "", err
		}
		where = append(where, "id < "+arg(after))
	}
	q := `SELECT ` + listColumns + ` FROM jobs`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC LIMIT " + arg(limit+1) // one more tells whether a next page exists

	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, "", sqlstore.Wrap("list jobs", err)
	}
	defer rows.Close()
	jobs := make([]*drydock.Job, 0, limit+1)
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, "", sqlstore.Wrap("list jobs", err)
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, "", sqlstore.Wrap("list jobs", err)
	}
	jobs, next := sqlstore.Page(jobs, limit)
	return jobs, next, nil
}

// badKey reports whether id cannot be a stored key: Postgres text holds
// neither NUL nor invalid UTF-8, and would answer such a parameter with an
// error rather than with no row.
func badKey(id string) bool {
	return !utf8.ValidString(id) || strings.IndexByte(id, 0) >= 0
}
