package client

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// maxDiffBytes bounds what Diff reads: the server cuts a diff at 8 MiB.
const maxDiffBytes = 9 << 20

// Diff is a job's workspace changes, as GET /v1/jobs/{id}/diff gives them.
type Diff struct {
	// Patch is a unified diff in git's format (new, deleted, renamed and
	// binary files as git shows them); empty when nothing changed. It is
	// the sandbox's text: escape it before printing it to a terminal.
	Patch []byte
	// Truncated says the server cut the diff; its last line says so.
	Truncated bool
}

// Diff returns the unified diff of a job's workspace against what the job
// started from: live while it runs, stored once it ended. A job without a
// sandbox yet gives ECONFLICT; one that ended without a diff, ENOTFOUND.
func (c *Client) Diff(ctx context.Context, id string) (*Diff, error) {
	p, err := jobPath(id, "/diff")
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, http.MethodGet, p, nil, nil, http.Header{"Accept": {"text/x-diff, text/plain;q=0.5"}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDiffBytes+1))
	if err != nil {
		return nil, fmt.Errorf("diff of %s: %w", id, err)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/x-diff" {
		return nil, c.foreign(resp, body)
	}
	if len(body) > maxDiffBytes {
		return nil, fmt.Errorf("diff of %s: the answer is larger than %d bytes", id, maxDiffBytes)
	}
	if resp.ContentLength >= 0 && int64(len(body)) != resp.ContentLength {
		return nil, fmt.Errorf("diff of %s: got %d of %d bytes", id, len(body), resp.ContentLength)
	}
	return &Diff{Patch: body, Truncated: resp.Header.Get("Drydock-Diff-Truncated") == "true"}, nil
}
