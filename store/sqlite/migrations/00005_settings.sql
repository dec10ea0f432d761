-- Settings the whole deployment shares, one row each: for now the check
-- value of the secrets key (BindSecretsKey), so that a server started with
-- another key than the one the stored secrets are sealed with refuses to
-- start instead of failing every job that has secrets.

-- +goose Up
CREATE TABLE settings (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL
);

-- +goose Down
DROP TABLE settings;
