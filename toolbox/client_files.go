package toolbox

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
)

// ReadFile returns a whole file. Files over the server's read cap are an
// ETOOLARGE error: read a line range or download them as a tar instead.
func (c *Client) ReadFile(ctx context.Context, path string) ([]byte, error) {
	resp, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/files", query: url.Values{"path": {path}}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// ReadLines returns lines start..end of a file (1-based, inclusive; end 0
// means to the end), with their newlines, and the file's number of lines.
func (c *Client) ReadLines(ctx context.Context, path string, start, end int) ([]byte, int, error) {
	q := url.Values{"path": {path}, "start_line": {strconv.Itoa(max(start, 1))}}
	if end > 0 {
		q.Set("end_line", strconv.Itoa(end))
	}
	resp, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/files", query: q})
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	total, _ := strconv.Atoi(resp.Header.Get(HeaderTotalLines))
	return data, total, nil
}

// WriteFile replaces (or creates) a file, creating missing parent
// directories. A new file gets mode 0644; an existing one keeps its mode.
func (c *Client) WriteFile(ctx context.Context, path string, data []byte) error {
	_, err := c.writeFile(ctx, path, data, url.Values{"path": {path}})
	return err
}

// WriteFileMode is WriteFile with the permission bits to set.
func (c *Client) WriteFileMode(ctx context.Context, path string, data []byte, mode fs.FileMode) (*FileInfo, error) {
	return c.writeFile(ctx, path, data, url.Values{"path": {path}, "mode": {strconv.FormatUint(uint64(mode.Perm()), 8)}})
}

func (c *Client) writeFile(ctx context.Context, path string, data []byte, q url.Values) (*FileInfo, error) {
	if data == nil {
		data = []byte{}
	}
	resp, err := c.do(ctx, call{method: http.MethodPut, path: "/v1/files", query: q, body: data, ctype: "application/octet-stream"})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var fi FileInfo
	if err := decodeBody(resp, &fi); err != nil {
		return nil, err
	}
	return &fi, nil
}

// Stat describes a file; for a symbolic link, the link itself.
func (c *Client) Stat(ctx context.Context, path string) (*FileInfo, error) {
	var fi FileInfo
	if err := c.doJSON(ctx, http.MethodGet, "/v1/files/stat", url.Values{"path": {path}}, nil, &fi); err != nil {
		return nil, err
	}
	return &fi, nil
}

// List returns the entries of a directory.
func (c *Client) List(ctx context.Context, path string) ([]FileInfo, error) {
	res, err := c.ListDepth(ctx, path, 1)
	if err != nil {
		return nil, err
	}
	return res.Entries, nil
}

// ListDepth lists a directory down to depth levels (1 is its own entries),
// without following symbolic links to directories.
func (c *Client) ListDepth(ctx context.Context, path string, depth int) (*ListResult, error) {
	var res ListResult
	q := url.Values{"path": {path}, "depth": {strconv.Itoa(max(depth, 1))}}
	if err := c.doJSON(ctx, http.MethodGet, "/v1/files/list", q, nil, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Move renames a file or directory, creating the destination's parents.
// Without overwrite an existing destination is an ECONFLICT error.
func (c *Client) Move(ctx context.Context, from, to string, overwrite bool) error {
	return c.doJSON(ctx, http.MethodPost, "/v1/files/move", nil, MoveRequest{From: from, To: to, Overwrite: overwrite}, nil)
}

// Delete removes a file, a link or an empty directory; with recursive, a
// whole tree.
func (c *Client) Delete(ctx context.Context, path string, recursive bool) error {
	q := url.Values{"path": {path}, "recursive": {strconv.FormatBool(recursive)}}
	return c.doJSON(ctx, http.MethodDelete, "/v1/files", q, nil, nil)
}

// Mkdir creates a directory and its missing parents; an existing directory
// is not an error.
func (c *Client) Mkdir(ctx context.Context, path string) error {
	return c.doJSON(ctx, http.MethodPost, "/v1/files/mkdir", nil, MkdirRequest{Path: path}, nil)
}

// UploadTar unpacks a tar (or gzip-compressed tar) stream into dir. The
// stream is sent as it is read, so the call is not retried.
func (c *Client) UploadTar(ctx context.Context, dir string, r io.Reader) (*TarResult, error) {
	resp, err := c.do(ctx, call{method: http.MethodPut, path: "/v1/files/tar", query: url.Values{"path": {dir}},
		stream: r, ctype: "application/x-tar"})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var res TarResult
	if err := decodeBody(resp, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// DownloadTar streams a directory (or one file) as an uncompressed tar whose
// names are relative to path. Symbolic links are archived as links. Paths
// in exclude (relative to path) are left out with everything below them. An
// archive cut short by the server ends in an error from the reader, never
// in a clean but incomplete tar.
func (c *Client) DownloadTar(ctx context.Context, path string, exclude ...string) (io.ReadCloser, error) {
	q := url.Values{"path": {path}}
	if len(exclude) > 0 {
		q["exclude"] = exclude
	}
	resp, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/files/tar", query: q})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
