package drydock

import (
	"context"
	"time"
)

// Store is the durable state of the orchestrator: jobs, their event logs, the
// job queue's leases, and API tokens. SQLite and Postgres implement it; both
// pass store/storetest.
//
// Errors: ENOTFOUND for a missing job or token, ELEASELOST when a worker no
// longer owns the job it reports on, ECONFLICT for a transition the job's
// state does not allow.
type Store interface {
	// CreateJob stores a new pending job (ID, OwnerID, CreatedAt and the spec
	// set by the caller) together with its first event, atomically. When it
	// returns nil the job is durable.
	CreateJob(ctx context.Context, job *Job) error
	// CreateJobOnce is CreateJob under an idempotency key of job.OwnerID.
	// In one transaction it either records the key and creates job (created
	// true, the job returned is job), or, when the owner's key is already
	// held by an unexpired record with the same Fingerprint, creates
	// nothing and returns the job that record names (created false). A
	// held key with another fingerprint is EKEYREUSED. Concurrent calls with
	// one key create one job: the others wait for its commit and return it.
	// An expired record counts as absent and is replaced.
	CreateJobOnce(ctx context.Context, job *Job, key IdempotencyKey) (stored *Job, created bool, err error)
	// PurgeIdempotencyKeys deletes every expired idempotency key and
	// returns how many it deleted (the runner's reaper calls it).
	PurgeIdempotencyKeys(ctx context.Context) (int, error)
	GetJob(ctx context.Context, id string) (*Job, error)
	// ListJobs returns jobs newest first and the cursor of the next page ("" at
	// the end).
	ListJobs(ctx context.Context, f JobFilter) ([]*Job, string, error)

	// ClaimJob gives owner a lease on one runnable job: the oldest pending one,
	// or a running one whose lease has expired (its worker died). The job is
	// returned running with Attempts incremented; nil, nil when there is none.
	// It appends no event: the worker records the transition it makes.
	ClaimJob(ctx context.Context, owner string, ttl time.Duration) (*Job, error)
	// RenewLease extends owner's lease and returns the job's current state (so
	// the worker sees cancel requests). ELEASELOST if owner lost it.
	RenewLease(ctx context.Context, id, owner string, ttl time.Duration) (*Job, error)
	// ReleaseLease expires owner's lease at once and keeps the job running, so
	// that the next claimer recovers it without waiting for the TTL. The owner
	// is cleared, so a late heartbeat of the releasing worker gets ELEASELOST.
	ReleaseLease(ctx context.Context, id, owner string) error
	// ExpireLeases releases every lease whose owner starts with prefix, except
	// those held by keep. A restarted server uses it to recover the jobs its
	// previous incarnation left running. It returns how many it released.
	ExpireLeases(ctx context.Context, prefix, keep string) (int, error)
	// UpdateProgress records progress reported by the lease owner.
	UpdateProgress(ctx context.Context, id, owner string, p JobProgress) error
	// FinishJob moves a running job owned by owner to a terminal state and
	// drops the lease.
	FinishJob(ctx context.Context, id, owner string, r JobResult) error
	// SetArtifact records the archived workspace of a job in any state.
	SetArtifact(ctx context.Context, id, key string, size int64) error
	// CancelJob cancels a pending job at once (returned cancelled) or flags a
	// running one (returned with CancelRequested). Terminal jobs are returned
	// unchanged.
	CancelJob(ctx context.Context, id string) (*Job, error)

	// SetEgress replaces the egress allowlist of a job that has not finished
	// and returns the job; ECONFLICT once it is terminal. The list is the
	// job's own from then on (EgressSource EgressFromJob). The caller
	// records the change as an event.
	SetEgress(ctx context.Context, id string, egress []string) (*Job, error)

	// AppendEvent assigns e the next Seq of its job, sets Time if zero, and
	// stores it.
	AppendEvent(ctx context.Context, e *Event) error
	// ListEvents returns up to limit events of a job with Seq > after, in order.
	ListEvents(ctx context.Context, jobID string, after int64, limit int) ([]*Event, error)

	CreateToken(ctx context.Context, t *Token) error
	// TokenByHash returns the unrevoked token with this hash, or ENOTFOUND. It
	// may record LastUsedAt in the background (at most once a minute).
	TokenByHash(ctx context.Context, hash []byte) (*Token, error)
	// TokenByID returns the unrevoked token with this id, or ENOTFOUND for
	// an unknown or revoked one. It records no use: the server asks it to
	// learn whether what a token opened (event streams, live views, signed
	// links) may stay open.
	TokenByID(ctx context.Context, id string) (*Token, error)
	ListTokens(ctx context.Context) ([]*Token, error)
	RevokeToken(ctx context.Context, id string) error
	// CountTokens counts unrevoked tokens; the server needs at least one to
	// listen beyond loopback.
	CountTokens(ctx context.Context) (int, error)

	// BindSecretsKey records check, a value derived from the key that seals
	// jobs' secrets, unless one is recorded already, and returns the one
	// recorded (replace records check in any case). Servers compare the two
	// to refuse a key other than the one the store's secrets are sealed
	// with; of concurrent first binds one wins and all return it.
	BindSecretsKey(ctx context.Context, check []byte, replace bool) ([]byte, error)

	// Ping checks that the store answers (readiness).
	Ping(ctx context.Context) error
	Close() error

	// Messages to a job's agent.

	// AppendMessage appends e as AppendEvent does, but only to a job that
	// has not finished, checked in the same transaction: ECONFLICT once
	// the job is terminal, since no agent would ever read it.
	AppendMessage(ctx context.Context, e *Event) error
	// SetWaitingFor records the question the agent of a running job owned
	// by owner waits on ("" clears it); ELEASELOST if owner lost the job.
	// FinishJob clears it.
	SetWaitingFor(ctx context.Context, id, owner, question string) error

	// Follow-ups. CreateJob stores
	// Job.ParentJobID, and every read returns it.

	// FollowUps returns the ids of the jobs whose ParentJobID is id,
	// oldest first; none is an empty list, not an error. A non-empty owner
	// lists only that owner's (an admin may follow up a user's job; the
	// user is not shown the admin's job).
	FollowUps(ctx context.Context, id, owner string) ([]string, error)
	// EraseSecretsFinishedBefore erases the sealed secrets kept by jobs
	// that ended before t (FinishJob with KeepSecrets) and returns how
	// many it erased; the runner's reaper calls it with the end of the
	// follow-up window.
	EraseSecretsFinishedBefore(ctx context.Context, t time.Time) (int, error)

	// Pause and take-over (pause.go).

	// ChangePause applies c to the job's pause state with ApplyPause, in
	// one transaction with the paused/resumed events it records, and
	// returns the job as stored. ENOTFOUND for an unknown job; ECONFLICT
	// for pausing, resuming or taking control of a finished job, and for
	// taking control that another holder's unexpired lease holds (the
	// message names the holder). Changes that change nothing (pausing a
	// paused job) succeed and record nothing.
	ChangePause(ctx context.Context, id string, c PauseChange) (*Job, error)
}
