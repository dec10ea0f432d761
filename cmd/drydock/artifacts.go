package main

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/artifact/local"
	"github.com/drydockhq/drydock/artifact/s3"
)

// openArtifacts opens the store named by --artifacts: empty for the
// artifacts directory under the data directory, a path or file:// URL for
// another directory, s3://BUCKET[/PREFIX]?endpoint=...&region=... for an
// S3-compatible store (credentials from AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, read through getenv). It also returns a
// description for the log, with nothing secret in it. Several replicas
// need a store they all reach: S3, or one directory they all mount.
func openArtifacts(ctx context.Context, spec, dataDir string, getenv func(string) string) (drydock.ArtifactStore, string, error) {
	switch {
	case spec == "":
		dir := filepath.Join(dataDir, "artifacts")
		st, err := local.New(dir)
		if err != nil {
			return nil, "", err
		}
		return st, dir, nil
	case strings.HasPrefix(spec, "s3://"):
		st, err := s3.Open(ctx, spec, getenv)
		if err != nil {
			return nil, "", fmt.Errorf("--artifacts: %w", err)
		}
		u, _ := url.Parse(spec) // Open parsed it already
		desc := "s3://" + u.Host + u.Path
		if ep := u.Query().Get("endpoint"); ep != "" {
			desc += " at " + ep
		}
		return st, desc, nil
	case strings.HasPrefix(spec, "file://"):
		u, err := url.Parse(spec)
		if err != nil || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
			return nil, "", fmt.Errorf("--artifacts %q: want file:///ABSOLUTE/PATH", spec)
		}
		st, err := local.New(u.Path)
		if err != nil {
			return nil, "", err
		}
		return st, u.Path, nil
	case strings.Contains(spec, "://"):
		return nil, "", fmt.Errorf("--artifacts %q: use a directory, file:///PATH or s3://BUCKET[/PREFIX]?endpoint=...", spec)
	default:
		dir, err := filepath.Abs(spec)
		if err != nil {
			return nil, "", fmt.Errorf("--artifacts %q: %w", spec, err)
		}
		st, err := local.New(dir)
		if err != nil {
			return nil, "", err
		}
		return st, dir, nil
	}
}
