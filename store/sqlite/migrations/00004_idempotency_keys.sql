-- Idempotency keys (the Idempotency-Key header of POST /v1/jobs): which job
-- a key of an owner created, and a keyed hash of the request it came with
-- (never the request, which may hold secrets). The primary key decides
-- between concurrent requests with one key; expired rows are ignored and
-- purged by the runner's reaper.

-- +goose Up
CREATE TABLE idempotency_keys (
    owner_id    TEXT NOT NULL,
    key         TEXT NOT NULL,
    fingerprint BLOB NOT NULL,
    job_id      TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    PRIMARY KEY (owner_id, key)
);

CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);
CREATE INDEX idempotency_keys_job_id ON idempotency_keys (job_id);

-- +goose Down
DROP TABLE idempotency_keys;
