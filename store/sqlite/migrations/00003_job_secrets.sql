-- Per-job secrets: their names (JSON array, NULL when none) and their values
-- sealed under the server's key (package secretbox; never plain text). The
-- sealed value is erased when the job ends.

-- +goose Up
ALTER TABLE jobs ADD COLUMN secret_names TEXT;
ALTER TABLE jobs ADD COLUMN secrets_sealed BLOB;

-- +goose Down
ALTER TABLE jobs DROP COLUMN secrets_sealed;
ALTER TABLE jobs DROP COLUMN secret_names;
