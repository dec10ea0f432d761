-- Pause and take-over. A job is paused while paused_at is set:
-- paused_by names who paused it (a person's pause), control_lease and
-- control_by the desktop connection that holds control until
-- control_expires_at. paused_ms sums the pauses that ended; pauses counts
-- the pauses begun, so a worker can tell that one came and went.

-- +goose Up
ALTER TABLE jobs ADD COLUMN paused_at TEXT;
ALTER TABLE jobs ADD COLUMN paused_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN pauses INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN paused_by TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN control_lease TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN control_by TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN control_expires_at TEXT;

-- +goose Down
ALTER TABLE jobs DROP COLUMN control_expires_at;
ALTER TABLE jobs DROP COLUMN control_by;
ALTER TABLE jobs DROP COLUMN control_lease;
ALTER TABLE jobs DROP COLUMN paused_by;
ALTER TABLE jobs DROP COLUMN pauses;
ALTER TABLE jobs DROP COLUMN paused_ms;
ALTER TABLE jobs DROP COLUMN paused_at;
