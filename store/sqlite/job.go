package sqlite

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
)

const (
	defaultListLimit = 50
	maxListLimit     = 500
)

// jobColumns is the column list every job query selects; scanJob reads it.
const jobColumns = `id, owner_id, status, created_at, started_at, finished_at, error, summary,
	task, model, max_steps, timeout_ms, profile, metadata, context_budget, egress,
	steps, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd,
	sandbox_id, artifact_key, artifact_size, cancel_requested, lease_owner, lease_expires_at, attempts,
	secret_names, secrets_sealed,
	input_key, input_size, egress_source,
	repo, pushed_commit,
	interactive, waiting_for, parent_job_id,
	paused_at, paused_ms, pauses, paused_by, control_lease, control_by, control_expires_at,
	isolation, agent`

// listColumns is jobColumns without the sealed secrets, which only the
// worker that runs a job needs (up to 128 KiB a job).
var listColumns = strings.Replace(jobColumns, "secrets_sealed", "NULL", 1)

type scanner interface{ Scan(dest ...any) error }

func scanJob(row scanner) (*drydock.Job, error) {
	var (
		j                 drydock.Job
		created           string
		started, finished sql.NullString
		leaseExpires      sql.NullString
		metadata, egress  sql.NullString
		secretNames       sql.NullString
		repo              sql.NullString
		timeoutMS         int64
		status, profile   string
		pausedAt          sql.NullString
		pausedMS          int64
		controlExpires    sql.NullString
	)
	err := row.Scan(&j.ID, &j.OwnerID, &status, &created, &started, &finished, &j.Error, &j.Summary,
		&j.Task, &j.Model, &j.MaxSteps, &timeoutMS, &profile, &metadata, &j.ContextBudget, &egress,
		&j.Steps, &j.Usage.InputTokens, &j.Usage.OutputTokens, &j.Usage.CacheReadTokens, &j.Usage.CacheWriteTokens, &j.Usage.CostUSD,
		&j.SandboxID, &j.ArtifactKey, &j.ArtifactSize, &j.CancelRequested, &j.LeaseOwner, &leaseExpires, &j.Attempts,
		&secretNames, &j.SealedSecrets,
		&j.InputKey, &j.InputSize, &j.EgressSource,
		&repo, &j.PushedCommit,
		&j.Interactive, &j.WaitingFor, &j.ParentJobID,
		&pausedAt, &pausedMS, &j.Pauses, &j.PausedBy, &j.ControlLease, &j.ControlBy, &controlExpires,
		&j.Isolation, &j.Agent)
	if err != nil {
		return nil, err
	}
	if j.PausedAt, err = parseNullTime(pausedAt); err != nil {
		return nil, err
	}
	if j.ControlExpiresAt, err = parseNullTime(controlExpires); err != nil {
		return nil, err
	}
	j.PausedTotal = time.Duration(pausedMS) * time.Millisecond
	j.Status = drydock.JobStatus(status)
	j.Profile = drydock.Profile(profile)
	j.Timeout = drydock.Duration(time.Duration(timeoutMS) * time.Millisecond)
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
	if metadata.Valid {
		if err := json.Unmarshal([]byte(metadata.String), &j.Metadata); err != nil {
			return nil, fmt.Errorf("stored metadata of job %s: %w", j.ID, err)
		}
	}
	if egress.Valid {
		if err := json.Unmarshal([]byte(egress.String), &j.Egress); err != nil {
			return nil, fmt.Errorf("stored egress of job %s: %w", j.ID, err)
		}
	}
	if repo.Valid {
		if err := json.Unmarshal([]byte(repo.String), &j.Repo); err != nil {
			return nil, fmt.Errorf("stored repo of job %s: %w", j.ID, err)
		}
	}
	j.SettlePause()
	if secretNames.Valid {
		if err := json.Unmarshal([]byte(secretNames.String), &j.SecretNames); err != nil {
			return nil, fmt.Errorf("stored secret names of job %s: %w", j.ID, err)
		}
	}
	return &j, nil
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
		return wrapErr("create job "+job.ID, err)
	}
	ins.done()
	return nil
}

// jobInsert is a new job encoded for the INSERT, so that encoding errors
// are found before the write is queued.
type jobInsert struct {
	job         *drydock.Job
	created     time.Time
	metadata    any
	egress      any
	secretNames any
	repo        *string
}

func newJobInsert(job *drydock.Job) (*jobInsert, error) {
	if job.ID == "" {
		return nil, drydock.Errorf(drydock.EINVALID, "job id is required")
	}
	ins := &jobInsert{job: job, created: job.CreatedAt}
	if ins.created.IsZero() {
		ins.created = now()
	}
	ins.created = ins.created.UTC().Truncate(time.Microsecond)
	if len(job.Metadata) > 0 {
		b, err := json.Marshal(job.Metadata)
		if err != nil {
			return nil, fmt.Errorf("create job %s: encode metadata: %w", job.ID, err)
		}
		ins.metadata = string(b)
	}
	var err error
	if ins.egress, err = listJSON("egress", job.Egress); err != nil {
		return nil, fmt.Errorf("create job %s: %w", job.ID, err)
	}
	if err := job.CheckSecretsSealed(); err != nil {
		return nil, err
	}
	if ins.secretNames, err = listJSON("secret names", job.SecretNames); err != nil {
		return nil, fmt.Errorf("create job %s: %w", job.ID, err)
	}
	if ins.repo, err = repoJSON(job.Repo); err != nil {
		return nil, fmt.Errorf("create job %s: %w", job.ID, err)
	}
	return ins, nil
}

var pendingEvent, _ = json.Marshal(statusData{Status: drydock.StatusPending})

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
		time.Duration(job.Timeout).Milliseconds(), string(job.Profile), ins.metadata, job.ContextBudget, ins.egress,
		ins.secretNames, job.SealedSecrets,
		job.InputKey, job.InputSize, job.EgressSource,
		ins.repo,
		job.Interactive, job.ParentJobID, job.Agent)
	if isConstraint(err) {
		return drydock.Errorf(drydock.ECONFLICT, "job %s already exists", job.ID)
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
	j, err := scanJob(s.reads.queryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("get job %s: %w", id, err)
	}
	return j, nil
}

// ListJobs pages through jobs by descending id: ids are UUIDv7, so this is
// newest first, and the cursor is the last id of the page.
func (s *Store) ListJobs(ctx context.Context, f drydock.JobFilter) ([]*drydock.Job, string, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	limit = min(limit, maxListLimit)

	var (
		where []string
		args  []any
	)
	if f.OwnerID != "" {
		where = append(where, "owner_id = ?")
		args = append(args, f.OwnerID)
	}
	if len(f.Status) > 0 {
		var marks []string
		for i, st := range f.Status {
			if !st.Valid() {
				return nil, "", drydock.Errorf(drydock.EINVALID, "unknown job status %q", st)
			}
			if slices.Contains(f.Status[:i], st) {
				continue // keeps the query small whatever the request repeats
			}
			marks = append(marks, "?")
			args = append(args, string(st))
		}
		where = append(where, "status IN ("+strings.Join(marks, ", ")+")")
	}
	for _, k := range slices.Sorted(maps.Keys(f.Metadata)) {
		// json_each rather than a JSON path: a key needs no quoting.
		where = append(where, "EXISTS (SELECT 1 FROM json_each(jobs.metadata) WHERE json_each.key = ? AND json_each.value = ?)")
		args = append(args, k, f.Metadata[k])
	}
	if f.Cursor != "" {
		after, err := decodeCursor(f.Cursor)
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
	jobs := make([]*drydock.Job, 0, limit)
	more := false
	for rows.Next() {
		if len(jobs) == limit {
			more = true
			break
		}
		j, err := scanJob(rows)
		if err != nil {
			return nil, "", fmt.Errorf("list jobs: %w", err)
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list jobs: %w", err)
	}
	next := ""
	if more {
		next = encodeCursor(jobs[len(jobs)-1].ID)
	}
	return jobs, next, nil
}

// The cursor is versioned so its form can change without old cursors being
// misread.
const cursorPrefix = "j1:"

func encodeCursor(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + id))
}

func decodeCursor(c string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(b), cursorPrefix) || len(b) == len(cursorPrefix) {
		return "", drydock.Errorf(drydock.EINVALID, "invalid cursor")
	}
	return string(b[len(cursorPrefix):]), nil
}

// statusData is the data of a status event.
type statusData = drydock.StatusEvent

func notFound(id string) error {
	return drydock.Errorf(drydock.ENOTFOUND, "job %s not found", id)
}

// wrapErr adds context to internal errors and returns *drydock.Error values
// as they are, so their user-facing message stays the one the caller sees.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var de *drydock.Error
	if errors.As(err, &de) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}

// listJSON encodes a list (egress allowlist, secret names) as its column
// value: NULL when empty.
func listJSON(what string, list []string) (*string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(list)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", what, err)
	}
	e := string(b)
	return &e, nil
}

// repoJSON encodes a job's repository as its column value: NULL when the
// job starts empty. It holds the secret's name only.
func repoJSON(r *drydock.RepoSpec) (*string, error) {
	if r == nil {
		return nil, nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode repo: %w", err)
	}
	e := string(b)
	return &e, nil
}
