package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/drydockhq/drydock"
)

var _ drydock.ArtifactStore = (*Store)(nil)

// Store keeps artifacts as files in Dir.
type Store struct {
	Dir string
}

// New creates dir if needed and returns a store over it.
func New(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create artifact dir: %w", err)
	}
	return &Store{Dir: dir}, nil
}

func (s *Store) path(key string) (string, error) {
	if err := drydock.CheckArtifactKey(key); err != nil {
		return "", err
	}
	return filepath.Join(s.Dir, key), nil
}

// Put streams r to a temporary file, syncs it, and renames it over key.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	p, err := s.path(key)
	if err != nil {
		return 0, err
	}
	f, err := os.CreateTemp(s.Dir, ".put-*")
	if err != nil {
		return 0, fmt.Errorf("put artifact %s: %w", key, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	n, err := io.Copy(f, ctxReader{ctx, r})
	if err != nil {
		return n, fmt.Errorf("put artifact %s: %w", key, err)
	}
	if err := f.Sync(); err != nil {
		return n, fmt.Errorf("put artifact %s: sync: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return n, fmt.Errorf("put artifact %s: close: %w", key, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return n, fmt.Errorf("put artifact %s: %w", key, err)
	}
	ok = true
	return n, nil
}

// Get opens the artifact for reading.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, drydock.Errorf(drydock.ENOTFOUND, "artifact %s not found", key)
	}
	if err != nil {
		return nil, fmt.Errorf("get artifact %s: %w", key, err)
	}
	return f, nil
}

// Delete removes the artifact; a missing one is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete artifact %s: %w", key, err)
	}
	return nil
}

// ctxReader stops a long copy when the context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
