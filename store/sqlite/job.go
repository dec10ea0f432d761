package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/store/sqlstore"
)

// listColumns is sqlstore.JobColumns without the sealed secrets, which only
// the worker that runs a job needs (up to 128 KiB a job).
var listColumns = strings.Replace(sqlstore.JobColumns, "secrets_sealed", "NULL", 1)

type scanner interface{ Scan(dest ...any) error }

func scanJob(row scanner) (*drydock.Job, error) {
	var (
		r                               sqlstore.JobRow
		created                         string
		started, finished, leaseExpires sql.NullString
		pausedAt, controlExpires        sql.NullString
	)
	err := row.Scan(r.Dest(sqlstore.JobTimes{
		Created: &created, Started: &started, Finished: &finished, LeaseExpires: &leaseExpires,
		PausedAt: &pausedAt, ControlExpires: &controlExpires,
	})...)
	if err != nil {
		return nil, err
	}
	j := &r.Job
	if j.PausedAt, err = parseNullTime(pausedAt); err != nil {
		return nil, err
	}
	if j.ControlExpiresAt, err = parseNullTime(controlExpires); err != nil {
		return nil, err
	}
	if j.CreatedAt, err = parseTime(created); err != nil {
		return nil, err
	}
	if j.StartedAt, err = parseNullTime(started); err != nil {
		return nil, err
	}
	if j.FinishedAt, err = parseNullTime(finished); err != nil {
		return nil, err
	}
	if t, err := parseNullTime(leaseExpires); err != nil {
		return nil, err
	} else if t != nil {
		j.LeaseExpiresAt = *t
	}
	return r.Decode()
}

// CreateJob stores job as pending with its first status event. It sets
// job.Status, and job.CreatedAt when zero, and rounds CreatedAt to the
// microseconds the store keeps.
func (s *Store) CreateJob(ctx context.Context, job *drydock.Job) error {
	ins, err := newJobInsert(job)
	if err != nil {
		return err
	}
	if err := s.w.do(ctx, ins.run); err != nil {
		return sqlstore.Wrap("create job "+job.ID, err)
	}
	ins.done()
	return nil
}

// jobInsert is a new job encoded for the INSERT, so that encoding errors
// are found before the write is queued.
type jobInsert struct {
	job     *drydock.Job
	created time.Time
	cols    sqlstore.JobJSON
}

func newJobInsert(job *drydock.Job) (*jobInsert, error) {
	cols, err := sqlstore.NewJob(job)
	if err != nil {
		return nil, err
	}
	ins := &jobInsert{job: job, created: job.CreatedAt, cols: cols}
	if ins.created.IsZero() {
		ins.created = now()
	}
	ins.created = ins.created.UTC().Truncate(time.Microsecond)
	return ins, nil
}

// pendingEvent is the data of every job's first event.
var pendingEvent = sqlstore.StatusData(drydock.StatusPending, "")

// run inserts the job and its first event inside the writer's transaction.
func (ins *jobInsert) run(ctx context.Context, tx *wtx) error {
	job, createdText := ins.job, fmtTime(ins.created)
	_, err := tx.ExecContext(ctx, `INSERT INTO jobs
		(id, owner_id, status, created_at, task, model, max_steps, timeout_ms, profile, metadata, context_budget, egress,
		 secret_names, secrets_sealed,
		 input_key, input_size, last_seq, egress_source,
		 repo,
		 interactive, parent_job_id, agent)
		VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?,
		 ?,
		 ?, ?, ?)`,
		job.ID, job.OwnerID, createdText, job.Task, job.Model, job.MaxSteps,
		time.Duration(job.Timeout).Milliseconds(), string(job.Profile), ins.cols.Metadata, job.ContextBudget, ins.cols.Egress,
		ins.cols.SecretNames, job.SealedSecrets,
		job.InputKey, job.InputSize, job.EgressSource,
		ins.cols.Repo,
		job.Interactive, job.ParentJobID, job.Agent)
	if isConstraint(err) {
		return sqlstore.Exists(job.ID)
	}
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO events (job_id, seq, type, time, data) VALUES (?, 1, ?, ?, ?)`,
		job.ID, string(drydock.EventStatus), createdText, string(pendingEvent))
	return err
}

// done reports the stored state back to the caller's job once committed.
func (ins *jobInsert) done() {
	ins.job.Status = drydock.StatusPending
	ins.job.CreatedAt = ins.created
}

// GetJob returns the job or ENOTFOUND.
func (s *Store) GetJob(ctx context.Context, id string) (*drydock.Job, error) {
	j, err := scanJob(s.reads.queryRow(ctx, `SELECT `+sqlstore.JobColumns+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sqlstore.NotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("get job %s: %w", id, err)
	}
	return j, nil
}

// ListJobs pages through jobs by descending id: ids are UUIDv7, so this is
// newest first, and the cursor is the last id of the page.
func (s *Store) ListJobs(ctx context.Context, f drydock.JobFilter) ([]*drydock.Job, string, error) {
	limit := sqlstore.ListLimit(f.Limit)

	var (
		where []string
		args  []any
	)
	if f.OwnerID != "" {
		where = append(where, "owner_id = ?")
		args = append(args, f.OwnerID)
	}
	if len(f.Status) > 0 {
		statuses, err := sqlstore.Statuses(f.Status)
		if err != nil {
			return nil, "", err
		}
		marks := make([]string, len(statuses))
		for i, st := range statuses {
			marks[i] = "?"
			args = append(args, st)
		}
		where = append(where, "status IN ("+strings.Join(marks, ", ")+")")
	}
	for _, k := range slices.Sorted(maps.Keys(f.Metadata)) {
		// json_each rather than a JSON path: a key needs no quoting.
		where = append(where, "EXISTS (SELECT 1 FROM json_each(jobs.metadata) WHERE json_each.key = ? AND json_each.value = ?)")
		args = append(args, k, f.Metadata[k])
	}
	if f.Cursor != "" {
		after, err := sqlstore.DecodeCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		where = append(where, "id < ?")
		args = append(args, after)
	}
	q := `SELECT ` + listColumns + ` FROM jobs`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC LIMIT ?"
	args = append(args, limit+1) // one more tells whether a next page exists

	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	jobs := make([]*drydock.Job, 0, limit+1)
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, "", fmt.Errorf("list jobs: %w", err)
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list jobs: %w", err)
	}
	jobs, next := sqlstore.Page(jobs, limit)
	return jobs, next, nil
}
