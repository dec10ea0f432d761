-- The isolation a job's sandbox ran under: gvisor, runc, none, or
-- a Kubernetes RuntimeClass; '' until the job has a sandbox.

-- +goose Up
ALTER TABLE jobs ADD COLUMN isolation TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE jobs DROP COLUMN isolation;
