package postgres

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

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
var listColumns = strings.Replace(jobColumns, "secrets_sealed", "NULL::bytea", 1)

func scanJob(row pgx.Row) (*drydock.Job, error) {
	var (
		j                 drydock.Job
		started, finished *time.Time
		leaseExpires      *time.Time
		metadata, egress  []byte
		secretNames       []byte
		repo              []byte
		timeoutMS         int64
		status, profile   string
		pausedAt          *time.Time
		pausedMS          int64
		controlExpires    *time.Time
	)
	err := row.Scan(&j.ID, &j.OwnerID, &status, &j.CreatedAt, &started, &finished, &j.Error, &j.Summary,
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
	j.PausedAt, j.ControlExpiresAt = utc(pausedAt), utc(controlExpires)
	j.PausedTotal = time.Duration(pausedMS) * time.Millisecond
	j.Status = drydock.JobStatus(status)
	j.Profile = drydock.Profile(profile)
	j.Timeout = drydock.Duration(time.Duration(timeoutMS) * time.Millisecond)
	j.CreatedAt = j.CreatedAt.UTC()
	j.StartedAt = utc(started)
	j.FinishedAt = utc(finished)
	if leaseExpires != nil {
		j.LeaseExpiresAt = leaseExpires.UTC()
	}
	if metadata != nil {
		if err := json.Unmarshal(metadata, &j.Metadata); err != nil {
			return nil, fmt.Errorf("stored metadata of job %s: %w", j.ID, err)
		}
	}
	if egress != nil {
		if err := json.Unmarshal(egress, &j.Egress); err != nil {
			return nil, fmt.Errorf("stored egress of job %s: %w", j.ID, err)
		}
	}
	if repo != nil {
		if err := json.Unmarshal(repo, &j.Repo); err != nil {
			return nil, fmt.Errorf("stored repo of job %s: %w", j.ID, err)
		}
	}
	j.SettlePause()
	if secretNames != nil {
		if err := json.Unmarshal(secretNames, &j.SecretNames); err != nil {
			return nil, fmt.Errorf("stored secret names of job %s: %w", j.ID, err)
		}
	}
	return &j, nil
}

// pendingEvent is the data of every job's first event.
var pendingEvent = mustJSON(statusData{Status: drydock.StatusPending})

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

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
	job         *drydock.Job
	metadata    *string
	egress      *string
	secretNames *string
	repo        *string
}

func newJobInsert(job *drydock.Job) (*jobInsert, error) {
	if job.ID == "" {
		return nil, drydock.Errorf(drydock.EINVALID, "job id is required")
	}
	ins := &jobInsert{job: job}
	if len(job.Metadata) > 0 {
		b, err := json.Marshal(job.Metadata)
		if err != nil {
			return nil, fmt.Errorf("create job %s: encode metadata: %w", job.ID, err)
		}
		m := string(b)
		ins.metadata = &m
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
		time.Duration(job.Timeout).Milliseconds(), string(job.Profile), ins.metadata, pendingEvent, job.ContextBudget, ins.egress,
		ins.secretNames, job.SealedSecrets,
		job.InputKey, job.InputSize, job.EgressSource,
		ins.repo,
		job.Interactive, job.ParentJobID, job.Agent).Scan(&created)
	switch {
	case isUnique(err):
		return drydock.Errorf(drydock.ECONFLICT, "job %s already exists", job.ID)
	case isBadText(err):
		return drydock.Errorf(drydock.EINVALID, "job %s: text fields must be valid UTF-8 without NUL characters", job.ID)
	case err != nil:
		return wrapErr("create job "+job.ID, err)
	}
	job.Status = drydock.StatusPending
	job.CreatedAt = created.UTC()
	return nil
}

// GetJob returns the job or ENOTFOUND.
func (s *Store) GetJob(ctx context.Context, id string) (*drydock.Job, error) {
	if badKey(id) {
		return nil, notFound(id)
	}
	j, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, wrapErr("get job "+id, err)
	}
	return j, nil
}

// ListJobs pages through jobs by descending id: ids are UUIDv7, so this is
// newest first, and the cursor is the last id of the page. The cursor has
// the SQLite store's form, so it means the same whichever store issued it.
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
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.OwnerID != "" {
		where = append(where, "owner_id = "+arg(f.OwnerID))
	}
	if len(f.Status) > 0 {
		var statuses []string
		for _, st := range f.Status {
			if !st.Valid() {
				return nil, "", drydock.Errorf(drydock.EINVALID, "unknown job status %q", st)
			}
			if !slices.Contains(statuses, string(st)) {
				statuses = append(statuses, string(st))
			}
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
		after, err := decodeCursor(f.Cursor)
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
		return nil, "", wrapErr("list jobs", err)
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
			return nil, "", wrapErr("list jobs", err)
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, "", wrapErr("list jobs", err)
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
	if err != nil || !strings.HasPrefix(string(b), cursorPrefix) || len(b) == len(cursorPrefix) || badKey(string(b)) {
		return "", drydock.Errorf(drydock.EINVALID, "invalid cursor")
	}
	return string(b[len(cursorPrefix):]), nil
}

// statusData is the data of a status event.
type statusData = drydock.StatusEvent

// badKey reports whether id cannot be a stored key: Postgres text holds
// neither NUL nor invalid UTF-8, and would answer such a parameter with an
// error rather than with no row.
func badKey(id string) bool {
	return !utf8.ValidString(id) || strings.IndexByte(id, 0) >= 0
}

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
