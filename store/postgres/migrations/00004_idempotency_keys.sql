-- Idempotency keys (the Idempotency-Key header of POST /v1/jobs): which job
-- a key of an owner created, and a keyed hash of the request it came with
-- (never the request, which may hold secrets). The primary key decides
-- between concurrent requests with one key; expired rows are ignored and
-- purged by the runner's reaper.
--
-- The key row is written before its job in the same transaction (the
-- primary key is the lock that makes a concurrent twin wait), so the
-- foreign key is checked at commit.

-- +goose Up
CREATE TABLE idempotency_keys (
    owner_id    TEXT COLLATE "C" NOT NULL,
    key         TEXT COLLATE "C" NOT NULL,
    fingerprint BYTEA NOT NULL,
    job_id      TEXT COLLATE "C" NOT NULL REFERENCES jobs (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    created_at  TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (owner_id, key)
);

CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);
CREATE INDEX idempotency_keys_job_id ON idempotency_keys (job_id);

-- +goose Down
DROP TABLE idempotency_keys;
