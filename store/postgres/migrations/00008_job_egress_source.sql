-- Where a job's egress list came from: 'job' (its own, given at creation
-- or set since) or 'default' (the server's --egress-default, copied when
-- the job gave none); '' for jobs from before server defaults.

-- +goose Up
ALTER TABLE jobs ADD COLUMN egress_source TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE jobs DROP COLUMN egress_source;
