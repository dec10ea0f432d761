-- The first schema of the store. It sticks to SQL that Postgres reads too
-- (apart from the column types noted below), so store/postgres can keep an
-- equivalent migration set with the same numbering.
--
-- Timestamps are TEXT in UTC, fixed width with microseconds
-- (2006-01-02T15:04:05.000000Z): they compare as strings in time order and
-- match the precision of Postgres's timestamptz. Postgres uses timestamptz,
-- bytea for BLOB and jsonb for the JSON text columns.

-- +goose Up
CREATE TABLE jobs (
    id                 TEXT PRIMARY KEY,
    owner_id           TEXT NOT NULL DEFAULT '',
    status             TEXT NOT NULL CHECK (status IN ('pending', 'running', 'complete', 'error', 'cancelled')),
    created_at         TEXT NOT NULL,
    started_at         TEXT,
    finished_at        TEXT,
    error              TEXT NOT NULL DEFAULT '',
    summary            TEXT NOT NULL DEFAULT '',

    task               TEXT NOT NULL,
    model              TEXT NOT NULL DEFAULT '',
    max_steps          INTEGER NOT NULL DEFAULT 0,
    timeout_ms         BIGINT NOT NULL DEFAULT 0,
    profile            TEXT NOT NULL DEFAULT '',
    metadata           TEXT, -- JSON object, NULL when empty

    steps              INTEGER NOT NULL DEFAULT 0,
    input_tokens       BIGINT NOT NULL DEFAULT 0,
    output_tokens      BIGINT NOT NULL DEFAULT 0,
    cache_read_tokens  BIGINT NOT NULL DEFAULT 0,
    cache_write_tokens BIGINT NOT NULL DEFAULT 0,
    cost_usd           DOUBLE PRECISION NOT NULL DEFAULT 0,

    sandbox_id         TEXT NOT NULL DEFAULT '',
    artifact_key       TEXT NOT NULL DEFAULT '',
    artifact_size      BIGINT NOT NULL DEFAULT 0,
    cancel_requested   BOOLEAN NOT NULL DEFAULT FALSE,
    lease_owner        TEXT NOT NULL DEFAULT '',
    lease_expires_at   TEXT,
    attempts           INTEGER NOT NULL DEFAULT 0,

    -- Seq of the job's newest event. Incrementing it in the transaction that
    -- inserts the event numbers events without gaps, on Postgres too (the
    -- UPDATE locks the job row).
    last_seq           BIGINT NOT NULL DEFAULT 0
);

-- Listing a caller's jobs, newest first.
CREATE INDEX jobs_owner_id ON jobs (owner_id, id);
-- Listing by status (admin views, counts).
CREATE INDEX jobs_status_id ON jobs (status, id);
-- The queue: the oldest pending job, and running jobs by lease expiry.
CREATE INDEX jobs_pending ON jobs (created_at, id) WHERE status = 'pending';
CREATE INDEX jobs_running_lease ON jobs (lease_expires_at) WHERE status = 'running';
CREATE INDEX jobs_lease_owner ON jobs (lease_owner) WHERE status = 'running';

CREATE TABLE events (
    job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    seq    BIGINT NOT NULL,
    type   TEXT NOT NULL,
    time   TEXT NOT NULL,
    data   TEXT NOT NULL, -- JSON
    PRIMARY KEY (job_id, seq)
);

CREATE TABLE tokens (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    admin        BOOLEAN NOT NULL DEFAULT FALSE,
    hash         BLOB NOT NULL UNIQUE, -- SHA-256 of the secret
    created_at   TEXT NOT NULL,
    revoked_at   TEXT,
    last_used_at TEXT
);

-- +goose Down
DROP TABLE tokens;
DROP TABLE events;
DROP TABLE jobs;
