package sqlstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/drydockhq/drydock"
)

// JobColumns is the column list every job query selects, in the order
// JobRow.Dest scans it.
const JobColumns = `id, owner_id, status, created_at, started_at, finished_at, error, summary,
	task, model, max_steps, timeout_ms, profile, metadata, context_budget, egress,
	steps, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd,
	sandbox_id, artifact_key, artifact_size, cancel_requested, lease_owner, lease_expires_at, attempts,
	secret_names, secrets_sealed,
	input_key, input_size, egress_source,
	repo, pushed_commit,
	interactive, waiting_for, parent_job_id,
	paused_at, paused_ms, pauses, paused_by, control_lease, control_by, control_expires_at,
	isolation, agent`

// JobRow is a job as its columns hold it, for the columns whose type is
// the same in both dialects; a store scans the time columns into its own
// types, sets them on Job, and calls Decode.
type JobRow struct {
	Job                                 drydock.Job
	status, profile                     string
	timeoutMS, pausedMS                 int64
	metadata, egress, secretNames, repo []byte // nil for NULL
}

// JobTimes are where a store scans a job's time columns, in its own types.
type JobTimes struct {
	Created, Started, Finished, LeaseExpires, PausedAt, ControlExpires any
}

// Dest returns the scan destinations of JobColumns.
func (r *JobRow) Dest(t JobTimes) []any {
	j := &r.Job
	return []any{&j.ID, &j.OwnerID, &r.status, t.Created, t.Started, t.Finished, &j.Error, &j.Summary,
		&j.Task, &j.Model, &j.MaxSteps, &r.timeoutMS, &r.profile, &r.metadata, &j.ContextBudget, &r.egress,
		&j.Steps, &j.Usage.InputTokens, &j.Usage.OutputTokens, &j.Usage.CacheReadTokens, &j.Usage.CacheWriteTokens, &j.Usage.CostUSD,
		&j.SandboxID, &j.ArtifactKey, &j.ArtifactSize, &j.CancelRequested, &j.LeaseOwner, t.LeaseExpires, &j.Attempts,
		&r.secretNames, &j.SealedSecrets,
		&j.InputKey, &j.InputSize, &j.EgressSource,
		&r.repo, &j.PushedCommit,
		&j.Interactive, &j.WaitingFor, &j.ParentJobID,
		t.PausedAt, &r.pausedMS, &j.Pauses, &j.PausedBy, &j.ControlLease, &j.ControlBy, t.ControlExpires,
		&j.Isolation, &j.Agent}
}

// Decode finishes the job once the store has set its times: the typed
// columns and the JSON ones, then the pause it derives from them.
func (r *JobRow) Decode() (*drydock.Job, error) {
	j := &r.Job
	j.PausedTotal = time.Duration(r.pausedMS) * time.Millisecond
	j.Status = drydock.JobStatus(r.status)
	j.Profile = drydock.Profile(r.profile)
	j.Timeout = drydock.Duration(time.Duration(r.timeoutMS) * time.Millisecond)
	for _, c := range []struct {
		what string
		col  []byte
		into any
	}{
		{"metadata", r.metadata, &j.Metadata},
		{"egress", r.egress, &j.Egress},
		{"repo", r.repo, &j.Repo},
		{"secret names", r.secretNames, &j.SecretNames},
	} {
		if c.col == nil {
			continue
		}
		if err := json.Unmarshal(c.col, c.into); err != nil {
			return nil, fmt.Errorf("stored %s of job %s: %w", c.what, j.ID, err)
		}
	}
	j.SettlePause()
	return j, nil
}

// JobJSON is a new job's JSON columns, encoded before the database is
// asked so that an encoding error stores nothing; nil is SQL NULL.
type JobJSON struct {
	Metadata, Egress, SecretNames, Repo *string
}

// NewJob checks a job before it is created and encodes its JSON columns.
func NewJob(job *drydock.Job) (JobJSON, error) {
	var cols JobJSON
	if job.ID == "" {
		return cols, drydock.Errorf(drydock.EINVALID, "job id is required")
	}
	if len(job.Metadata) > 0 {
		b, err := json.Marshal(job.Metadata)
		if err != nil {
			return cols, fmt.Errorf("create job %s: encode metadata: %w", job.ID, err)
		}
		m := string(b)
		cols.Metadata = &m
	}
	var err error
	if cols.Egress, err = ListJSON("egress", job.Egress); err != nil {
		return cols, fmt.Errorf("create job %s: %w", job.ID, err)
	}
	if err := job.CheckSecretsSealed(); err != nil {
		return cols, err
	}
	if cols.SecretNames, err = ListJSON("secret names", job.SecretNames); err != nil {
		return cols, fmt.Errorf("create job %s: %w", job.ID, err)
	}
	if job.Repo != nil {
		b, err := json.Marshal(job.Repo) // the secret's name only
		if err != nil {
			return cols, fmt.Errorf("create job %s: encode repo: %w", job.ID, err)
		}
		r := string(b)
		cols.Repo = &r
	}
	return cols, nil
}

// ListJSON encodes a list (egress allowlist, secret names) as its column
// value: NULL when empty.
func ListJSON(what string, list []string) (*string, error) {
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
