-- Messages to a job's agent: whether the job offers the
-- ask_user tool, and the question its agent waits on ('' when none).

-- +goose Up
ALTER TABLE jobs ADD COLUMN interactive BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE jobs ADD COLUMN waiting_for TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE jobs DROP COLUMN waiting_for;
ALTER TABLE jobs DROP COLUMN interactive;
