package secretbox

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// LoadKey reads a key file: KeySize random bytes, base64 (standard or URL
// alphabet, padded or not), surrounding white space ignored. Make one with
//
//	head -c 32 /dev/urandom | base64 > secrets.key
func LoadKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read secrets key: %w", err)
	}
	defer clear(b)
	key, err := decodeKey(bytes.TrimSpace(b))
	if err != nil {
		return nil, fmt.Errorf("secrets key %s: %w", path, err)
	}
	return key, nil
}

func decodeKey(text []byte) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		key := make([]byte, enc.DecodedLen(len(text)))
		n, err := enc.Decode(key, text)
		if err == nil && n == KeySize {
			return key[:n], nil
		}
		clear(key)
	}
	return nil, fmt.Errorf("the file must hold %d random bytes in base64 (e.g. head -c 32 /dev/urandom | base64)", KeySize)
}

// LoadOrCreateKey reads the key file at path, creating it (mode 0600, with
// a fresh random key) when it does not exist. The file appears whole or not
// at all, so a crash while creating it does not leave a broken key behind.
func LoadOrCreateKey(path string) ([]byte, error) {
	key, err := LoadKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".secrets-key-*")
	if err != nil {
		return nil, fmt.Errorf("create secrets key: %w", err)
	}
	defer os.Remove(tmp.Name())
	key = GenerateKey()
	text := base64.StdEncoding.EncodeToString(key) + "\n"
	// CreateTemp makes the file 0600 already; Chmod states it.
	if err = tmp.Chmod(0o600); err == nil {
		if _, err = tmp.WriteString(text); err == nil {
			err = tmp.Sync()
		}
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("write secrets key: %w", err)
	}
	// Link fails if another process created the key meanwhile: use theirs.
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		return LoadKey(path)
	} else if err != nil {
		return nil, fmt.Errorf("create secrets key: %w", err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return key, nil
}

// GenerateKey returns a new random key.
func GenerateKey() []byte {
	key := make([]byte, KeySize)
	_, _ = rand.Read(key) // never fails (see drydock.RandomHex)
	return key
}
