package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/drydockhq/drydock"

	"github.com/drydockhq/drydock/secretbox"
)

// SecretsOptions say where the key that seals jobs' secrets lives.
type SecretsOptions struct {
	KeyFile  string `name:"secrets-key-file" env:"DRYDOCK_SECRETS_KEY_FILE" placeholder:"PATH" help:"File holding the key that seals jobs' secrets in the store: 32 random bytes in base64 (head -c 32 /dev/urandom | base64). Default with SQLite: secrets.key in the data directory, created on first start. With Postgres every replica needs the same file; without one, jobs with secrets are refused."`
	KeyReset bool   `name:"secrets-key-reset" help:"Adopt the secrets key given although the store's secrets were sealed with another one (a lost or rotated key file). Jobs still holding secrets sealed with the old key fail when they run, and idempotency keys made under it answer 422 until they expire."`
}

// keyCheckPurpose names the MAC a store records of its secrets key.
const keyCheckPurpose = "drydock secrets key check v1"

// box returns the sealer of jobs' secrets, or nil when this server takes
// none (Postgres without a key file: replicas must share one key, and a
// key of this replica's own would strand its jobs' secrets on it). The key
// is bound to the store: a server with another key than the one its
// secrets are sealed with (a replica given the wrong file, a data directory
// whose key file was lost) refuses to start rather than fail every job with
// secrets it claims.
func (o SecretsOptions) box(ctx context.Context, st drydock.Store, dataDir string, sqliteStore bool, log *slog.Logger) (*secretbox.Box, error) {
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
	case o.KeyReset:
		return nil, fmt.Errorf("--secrets-key-reset adopts the key of --secrets-key-file, and none is given")
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
	check := b.MAC(keyCheckPurpose, nil)
	bound, err := st.BindSecretsKey(ctx, check, o.KeyReset)
	if err != nil {
		return nil, err
	}
	if !hmac.Equal(bound, check) {
		return nil, fmt.Errorf("secrets key %s: this is not the key the store's secrets are sealed with (every replica needs the same --secrets-key-file; a lost data-directory key is replaced by a new one). Restore the key the store was used with, or pass --secrets-key-reset to adopt this one: jobs still holding secrets sealed with the old key will fail", path)
	}
	if o.KeyReset {
		log.Warn("secrets key adopted by --secrets-key-reset: jobs holding secrets sealed with an earlier key will fail", "file", path)
	}
	log.Info("secrets key", "file", path)
	return b, nil
}

// SecretFlags are the secrets a job is scheduled with. Values never come
// from the command line itself, where shell history and ps would keep them.
type SecretFlags struct {
	Secret     []string          `name:"secret" placeholder:"NAME" help:"Give the sandbox the environment variable NAME with the value it has here (export it first); masked in everything the job produces. Repeatable."`
	SecretFile map[string]string `name:"secret-file" placeholder:"NAME=PATH" mapsep:"none" help:"Give the sandbox the variable NAME with the contents of the file at PATH (one trailing newline dropped). Repeatable."`
}

// values reads the secrets' values from the environment (lookup) and from
// files.
func (f SecretFlags) values(lookup func(string) (string, bool)) (drydock.SecretValues, error) {
	if len(f.Secret) == 0 && len(f.SecretFile) == 0 {
		return nil, nil
	}
	out := drydock.SecretValues{}
	for _, name := range f.Secret {
		if n, _, ok := strings.Cut(name, "="); ok {
			// Only the name is repeated: the rest is the value.
			return nil, fmt.Errorf("--secret takes a variable name, not NAME=VALUE (a value on the command line stays in shell history and ps): export %s and pass --secret %s, or use --secret-file %s=PATH", n, n, n)
		}
		v, ok := lookup(name)
		if !ok {
			return nil, fmt.Errorf("--secret %s: the environment variable %s is not set here; export it first (or use --secret-file %s=PATH)", name, name, name)
		}
		if err := addSecret(out, name, v, "--secret"); err != nil {
			return nil, err
		}
	}
	for name, path := range f.SecretFile {
		b, err := readSecretFile(path)
		if err != nil {
			return nil, fmt.Errorf("--secret-file %s: %w", name, err)
		}
		v := string(bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r")))
		clear(b)
		if err := addSecret(out, name, v, "--secret-file"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func addSecret(out drydock.SecretValues, name, value, flag string) error {
	if _, dup := out[name]; dup {
		return fmt.Errorf("%s %s: the secret %s is given twice", flag, name, name)
	}
	out[name] = value
	return nil
}

// readSecretFile reads at most one byte more than a secret may hold, so a
// wrong path (a log, a disk image) fails fast instead of being read whole.
func readSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, drydock.MaxSecretValueLen+3))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}
