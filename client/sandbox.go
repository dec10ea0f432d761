package client

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// CommandResult is how a command in a held sandbox ended (POST
// /v1/jobs/{id}/commands): its exit code and its output, stdout and stderr
// interleaved, capped (head and tail kept; the whole output is saved in
// the workspace at OutputPath) and masked for the job's secrets.
type CommandResult struct {
	JobID       string `json:"job_id"`
	ExitCode    int    `json:"exit_code"`
	Output      string `json:"output"`
	Truncated   bool   `json:"truncated,omitempty"`
	OutputBytes int64  `json:"output_bytes"`
	OutputPath  string `json:"output_path,omitempty"`
	TimedOut    bool   `json:"timed_out,omitempty"`
	ShellExited bool   `json:"shell_exited,omitempty"`
}

// RunCommand runs a bash command in the sandbox of job id, which must have
// been scheduled with Agent drydock.AgentNone and be running. Commands share
// one shell: its working directory, variables and background jobs persist.
// timeout 0 is the server's default (2m).
func (c *Client) RunCommand(ctx context.Context, id, command string, timeout time.Duration) (*CommandResult, error) {
	p, err := jobPath(id, "/commands")
	if err != nil {
		return nil, err
	}
	body := map[string]any{"command": command}
	if timeout > 0 {
		body["timeout"] = timeout.String()
	}
	var res CommandResult
	if err := c.doJSON(ctx, http.MethodPost, p, nil, body, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// WrittenFile is what PUT /v1/jobs/{id}/files/{path} wrote.
type WrittenFile struct {
	JobID string `json:"job_id"`
	Path  string `json:"path"`
	Size  int64  `json:"size"`
}

// WriteFile creates or replaces the file at path (relative to the
// workspace root) in the sandbox of job id, which must have been scheduled
// with Agent drydock.AgentNone and be running.
func (c *Client) WriteFile(ctx context.Context, id, path, text string) (*WrittenFile, error) {
	p, err := filePath(id, path)
	if err != nil {
		return nil, err
	}
	var res WrittenFile
	if err := c.doJSON(ctx, http.MethodPut, p, nil, map[string]string{"text": text}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// filePath is the escaped route of a workspace path, each segment escaped
// on its own so that a "?" or "%" in a name stays part of it.
func filePath(id, path string) (string, error) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return jobPath(id, "/files/"+strings.Join(segs, "/"))
}
