-- The first schema of the store, the Postgres twin of
-- store/sqlite/migrations/00001_init.sql (same version number, same tables,
-- columns and indexes), with Postgres types: timestamptz for the text times,
-- bytea for BLOB, jsonb for the job metadata.
--
-- Ids compare with the "C" collation, byte by byte as in SQLite, whatever the
-- database's locale: job ids order the job list and break ties in the queue.
--
-- events.data is json, not jsonb: json keeps the exact text the worker wrote
-- (SQLite does too) and accepts \u0000, which jsonb rejects, so a tool output
-- containing a NUL byte cannot fail its event. Nothing queries inside it.

-- +goose Up
CREATE TABLE jobs (
    id                 TEXT COLLATE "C" PRIMARY KEY,
    owner_id           TEXT COLLATE "C" NOT NULL DEFAULT '',
    status             TEXT NOT NULL CHECK (status IN ('pending', 'running', 'complete', 'error', 'cancelled')),
    created_at         TIMESTAMPTZ NOT NULL,
    started_at         TIMESTAMPTZ,
    finished_at        TIMESTAMPTZ,
    error              TEXT NOT NULL DEFAULT '',
    summary            TEXT NOT NULL DEFAULT '',

    task               TEXT NOT NULL,
    model              TEXT NOT NULL DEFAULT '',
    max_steps          INTEGER NOT NULL DEFAULT 0,
    timeout_ms         BIGINT NOT NULL DEFAULT 0,
    profile            TEXT NOT NULL DEFAULT '',
    metadata           JSONB, -- NULL when empty

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
    lease_owner        TEXT COLLATE "C" NOT NULL DEFAULT '',
    lease_expires_at   TIMESTAMPTZ,
    attempts           INTEGER NOT NULL DEFAULT 0,

    -- Seq of the job's newest event. Incrementing it in the transaction that
    -- inserts the event locks the job row, so concurrent appends to one job
    -- serialise and seqs come out gapless in commit order.
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
    job_id TEXT COLLATE "C" NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    seq    BIGINT NOT NULL,
    type   TEXT NOT NULL,
    time   TIMESTAMPTZ NOT NULL,
    data   JSON NOT NULL,
    PRIMARY KEY (job_id, seq)
);

CREATE TABLE tokens (
    id           TEXT COLLATE "C" PRIMARY KEY,
    name         TEXT NOT NULL,
    admin        BOOLEAN NOT NULL DEFAULT FALSE,
    hash         BYTEA NOT NULL UNIQUE, -- SHA-256 of the secret
    created_at   TIMESTAMPTZ NOT NULL,
    revoked_at   TIMESTAMPTZ,
    last_used_at TIMESTAMPTZ
);

-- +goose Down
DROP TABLE tokens;
DROP TABLE events;
DROP TABLE jobs;
