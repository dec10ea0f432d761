package toolbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/drydockhq/drydock"
)

// CreateSession starts a persistent shell session.
func (c *Client) CreateSession(ctx context.Context, req SessionRequest) (*Session, error) {
	var s Session
	if err := c.doJSON(ctx, http.MethodPost, "/v1/sessions", nil, req, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Sessions lists the sessions.
func (c *Client) Sessions(ctx context.Context) ([]Session, error) {
	var s []Session
	if err := c.doJSON(ctx, http.MethodGet, "/v1/sessions", nil, nil, &s); err != nil {
		return nil, err
	}
	return s, nil
}

// DeleteSession kills a session's shell and everything in its process group.
func (c *Client) DeleteSession(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/sessions/"+url.PathEscape(id), nil, nil, nil)
}

// RestartSession replaces a session's shell with a fresh one in the
// session's starting directory and environment.
func (c *Client) RestartSession(ctx context.Context, id string) (*Session, error) {
	var s Session
	if err := c.doJSON(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/restart", nil, nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Run runs a command in a session and waits for it to end, to print nothing
// for req.IdleTimeout (then the result says Running), or to pass
// req.Timeout. An empty command waits for the running one.
func (c *Client) Run(ctx context.Context, session string, req RunRequest) (*RunResult, error) {
	var res RunResult
	if err := c.doJSON(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(session)+"/run", nil, req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Interrupt sends Ctrl-C to the command running in a session and reports
// how it ended (Running if it did not stop within the server's grace period).
func (c *Client) Interrupt(ctx context.Context, session string) (*RunResult, error) {
	var res RunResult
	if err := c.doJSON(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(session)+"/interrupt", nil, nil, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Exec runs one process outside any session, copying its output to stdout
// and stderr (either may be nil) as it arrives. Cancelling ctx kills the
// process.
func (c *Client) Exec(ctx context.Context, req ExecRequest, stdout, stderr io.Writer) (*ExecResult, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode exec request: %w", err)
	}
	resp, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/exec", body: b, ctype: "application/json"})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var f ExecFrame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			return nil, fmt.Errorf("exec: decode frame: %w", err)
		}
		var w io.Writer
		switch f.Type {
		case FrameStdout:
			w = stdout
		case FrameStderr:
			w = stderr
		case FrameExit:
			return &ExecResult{ExitCode: f.ExitCode, TimedOut: f.TimedOut, Duration: time.Duration(f.Duration), OutOfMemory: f.OutOfMemory}, nil
		case FrameError:
			if f.Error != nil {
				return nil, &drydock.Error{Code: f.Error.Code, Message: f.Error.Message}
			}
			return nil, drydock.Errorf(drydock.EINTERNAL, "exec failed")
		}
		if w != nil {
			if _, err := w.Write(f.Data); err != nil {
				return nil, fmt.Errorf("exec: write output: %w", err)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	return nil, fmt.Errorf("%w: %v", drydock.Errorf(drydock.EUNAVAILABLE, "exec output ended before the process did"), sc.Err())
}

// RunCode runs python in the sandbox's persistent kernel, or javascript or
// typescript with node.
func (c *Client) RunCode(ctx context.Context, req CodeRequest) (*CodeResult, error) {
	var res CodeResult
	if err := c.doJSON(ctx, http.MethodPost, "/v1/code/run", nil, req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Screenshot takes a PNG of the sandbox's display.
func (c *Client) Screenshot(ctx context.Context) (*Screenshot, error) {
	var s Screenshot
	if err := c.doJSON(ctx, http.MethodGet, "/v1/desktop/screenshot", nil, nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// DesktopAction performs one computer-tool action on the sandbox's display.
func (c *Client) DesktopAction(ctx context.Context, a DesktopAction) (*DesktopResult, error) {
	var res DesktopResult
	if err := c.doJSON(ctx, http.MethodPost, "/v1/desktop/action", nil, a, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
