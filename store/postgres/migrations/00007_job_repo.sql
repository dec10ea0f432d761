-- The git repository a job starts from (JSON {"url", "ref", "secret"}: the
-- secret's name, never its value), NULL for a job that starts empty.

-- +goose Up
ALTER TABLE jobs ADD COLUMN repo JSONB;

-- +goose Down
ALTER TABLE jobs DROP COLUMN repo;
