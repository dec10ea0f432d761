-- The git repository a job starts from (JSON {"url", "ref", "secret"}: the
-- secret's name, never its value), NULL for a job that starts empty.

-- pushed_commit is the commit a completed job pushed to its repository.

-- +goose Up
ALTER TABLE jobs ADD COLUMN repo JSONB;
ALTER TABLE jobs ADD COLUMN pushed_commit TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE jobs DROP COLUMN pushed_commit;
ALTER TABLE jobs DROP COLUMN repo;
