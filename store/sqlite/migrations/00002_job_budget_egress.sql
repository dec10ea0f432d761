-- Per-job context budget and egress allowlist (JSON array of "host[:port]",
-- NULL when empty). The egress list changes while a job runs (SetEgress).

-- +goose Up
ALTER TABLE jobs ADD COLUMN context_budget INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN egress TEXT;

-- +goose Down
ALTER TABLE jobs DROP COLUMN egress;
ALTER TABLE jobs DROP COLUMN context_budget;
