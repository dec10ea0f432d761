package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// FileInfo is one entry of a workspace directory listing; Path is relative
// to the workspace root.
type FileInfo struct {
	Name       string    `json:"name"`
	Path       string    `json:"path"`
	Type       string    `json:"type"` // file, dir, symlink, other
	Size       int64     `json:"size"`
	Mode       uint32    `json:"mode"`
	ModTime    time.Time `json:"mod_time,omitzero"`
	LinkTarget string    `json:"link_target,omitempty"`
}

// Listing is a workspace directory. Source is "sandbox" while the job runs,
// "archive" once it has ended.
type Listing struct {
	Path      string     `json:"path"`
	Source    string     `json:"source"`
	Entries   []FileInfo `json:"entries"`
	Truncated bool       `json:"truncated,omitempty"`
}

// WorkspacePath is what a workspace path holds: a directory's Listing, or
// a file's first bytes (Data, at most the limit asked for; Truncated when
// the file is longer than that, Size its whole length).
type WorkspacePath struct {
	Listing   *Listing
	Data      []byte
	Size      int64
	Truncated bool
}

// ReadPath reads a path of job id's workspace (GET
// /v1/jobs/{id}/files/{path}; "" is the root): live from the sandbox while
// the job runs, from its archive once it has ended. A file's content is read
// up to limit bytes (the job's secret values are masked by the server).
func (c *Client) ReadPath(ctx context.Context, id, path string, limit int64) (*WorkspacePath, error) {
	p, err := filePath(id, path)
	if err != nil {
		return nil, err
	}
	// download=1 lifts the server's limit on inline views; the client
	// reads only what it was asked for.
	resp, err := c.do(ctx, http.MethodGet, p, url.Values{"download": {"1"}}, nil, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	// A file is served as an attachment; a directory as a JSON listing.
	if resp.Header.Get("Content-Disposition") == "" {
		rd, err := c.jsonBody(resp)
		if err != nil {
			return nil, err
		}
		var l Listing
		if err := json.NewDecoder(rd).Decode(&l); err != nil {
			return nil, fmt.Errorf("read the listing of %s: %w", p, err)
		}
		return &WorkspacePath{Listing: &l}, nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	out := &WorkspacePath{Data: data, Size: resp.ContentLength}
	if int64(len(data)) > limit {
		out.Data, out.Truncated = data[:limit], true
	}
	if out.Size < int64(len(out.Data)) {
		out.Size = int64(len(out.Data))
	}
	return out, nil
}
