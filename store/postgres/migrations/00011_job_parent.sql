-- The finished job a job follows up: '' for a job that starts
-- afresh. Indexed, since a job's page lists its follow-ups.

-- +goose Up
ALTER TABLE jobs ADD COLUMN parent_job_id TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_parent_job_id ON jobs (parent_job_id, id) WHERE parent_job_id <> '';

-- +goose Down
DROP INDEX jobs_parent_job_id;
ALTER TABLE jobs DROP COLUMN parent_job_id;
