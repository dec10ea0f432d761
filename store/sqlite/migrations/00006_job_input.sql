-- The workspace archive a job starts from (an upload, stored in the
-- ArtifactStore as tar.gz): its key ('' for an empty workspace) and size.

-- +goose Up
ALTER TABLE jobs ADD COLUMN input_key TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN input_size BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE jobs DROP COLUMN input_size;
ALTER TABLE jobs DROP COLUMN input_key;
