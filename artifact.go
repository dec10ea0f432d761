package drydock

import (
	"context"
	"io"
)

// ArtifactStore keeps archived workspaces (gzip-compressed tar streams).
// A local directory implements it; S3-compatible stores later.
type ArtifactStore interface {
	// Put stores r under key and returns the bytes written. A failed Put
	// leaves nothing under key.
	Put(ctx context.Context, key string, r io.Reader) (int64, error)
	// Get opens the blob; ENOTFOUND if there is none.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	Delete(ctx context.Context, key string) error
}

// DiffArtifactKey is where a job's workspace diff is stored beside its
// archive.
func DiffArtifactKey(jobID string) string { return jobID + ".diff" }
