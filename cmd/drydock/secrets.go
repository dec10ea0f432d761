package main

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/drydockhq/drydock/secretbox"
)

// SecretsOptions say where the key that seals jobs' secrets lives.
type SecretsOptions struct {
	KeyFile string `name:"secrets-key-file" env:"DRYDOCK_SECRETS_KEY_FILE" placeholder:"PATH" help:"File holding the key that seals jobs' secrets in the store: 32 random bytes in base64 (head -c 32 /dev/urandom | base64). Default with SQLite: secrets.key in the data directory, created on first start. With Postgres every replica needs the same file; without one, jobs with secrets are refused."`
}

// box returns the sealer of jobs' secrets, or nil when this server takes
// none (Postgres without a key file: replicas must share one key, and a
// key of this replica's own would strand its jobs' secrets on it).
func (o SecretsOptions) box(dataDir string, sqliteStore bool, log *slog.Logger) (*secretbox.Box, error) {
	var (
		key  []byte
		err  error
		path = o.KeyFile
	)
	switch {
	case path != "":
		key, err = secretbox.LoadKey(path)
	case sqliteStore:
		path = filepath.Join(dataDir, "secrets.key")
		key, err = secretbox.LoadOrCreateKey(path)
	default:
		log.Warn("no --secrets-key-file: jobs with secrets are refused (with Postgres every replica needs the same key file)")
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--secrets-key-file: %w", err)
	}
	defer clear(key)
	b, err := secretbox.New(key)
	if err != nil {
		return nil, fmt.Errorf("--secrets-key-file %s: %w", path, err)
	}
	log.Info("secrets key", "file", path)
	return b, nil
}
