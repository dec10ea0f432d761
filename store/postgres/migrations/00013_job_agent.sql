-- Who works in a job's sandbox: '' the server's agent, 'none' a
-- sandbox held for the caller (run_command, write_file) until its timeout.

-- +goose Up
ALTER TABLE jobs ADD COLUMN agent TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE jobs DROP COLUMN agent;
