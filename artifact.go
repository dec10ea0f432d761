package drydock

import (
	"context"
	"io"
	"regexp"
)

// ArtifactStore keeps archived workspaces (gzip-compressed tar streams) and
// the other blobs of a job (its diff, its input archive). A local directory
// and an S3-compatible bucket implement it; artifact/artifacttest is the
// contract both pass.
type ArtifactStore interface {
	// Put stores r under key and returns the bytes written. A failed or
	// cancelled Put leaves nothing new under key: an older blob there
	// stays whole. A key CheckArtifactKey refuses is EINVALID.
	Put(ctx context.Context, key string, r io.Reader) (int64, error)
	// Get opens the blob; ENOTFOUND if there is none.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Delete removes the blob; deleting one that is not there is no error.
	Delete(ctx context.Context, key string) error
}

var artifactKeyPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$`)

// CheckArtifactKey refuses (EINVALID) a key that is not a flat, safe name:
// a letter or digit, then at most 200 letters, digits, dots, dashes and
// underscores. Keys come from job ids, but a store does not trust its
// callers to keep a key from naming a path, and every store takes the same
// keys so that an operator can move from one to another.
func CheckArtifactKey(key string) error {
	if !artifactKeyPattern.MatchString(key) {
		return Errorf(EINVALID, "invalid artifact key %q", key)
	}
	return nil
}

// DiffArtifactKey is where a job's workspace diff is stored beside its
// archive.
func DiffArtifactKey(jobID string) string { return jobID + ".diff" }

// DiffIgnoredMarker starts each line before a diff's first file that
// names an untracked path the workspace's ignore rules leave out of the
// diff (a directory ends in /; an unusual name is quoted as git quotes
// it). A reviewer learns of what is not shown: node_modules/, build
// output, or a directory an agent hid behind a .gitignore of its own. git
// apply skips such lines, as it skips the text before a mailed patch.
const DiffIgnoredMarker = "drydock: not shown, ignored by .gitignore: "
