package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
)

// DefaultUserAgent is sent when no WithUserAgent option is given.
const DefaultUserAgent = "drydock-go-client"

// maxErrorBody bounds how much of an error answer is read, so a misbehaving
// proxy cannot make the client buffer a huge page.
const maxErrorBody = 64 << 10

// Client talks to one Drydock server. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	baseErr   error
	token     string
	hc        *http.Client
	userAgent string

	// Reconnect backoff (event streams, Schedule's retries) and the idle
	// limit of event streams. Fields rather than constants so the package's
	// tests do not wait seconds.
	backoffMin, backoffMax time.Duration
	streamIdle             time.Duration
	pollMin, pollMax       time.Duration

	// Retries of Schedule after an answer was lost (with the backoff above).
	retries int
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client send requests through hc, for custom
// transports, proxies or TLS settings. Do not set hc.Timeout: it would cut
// event streams and large downloads; bound calls with their context instead.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.hc = hc
		}
	}
}

// WithRetries sets how many times Schedule sends a request again when its
// answer was lost (default DefaultRetries); 0 sends it once.
func WithRetries(n int) Option {
	return func(c *Client) { c.retries = max(0, n) }
}

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.userAgent = ua }
}

// New returns a client for the server at baseURL (for example
// "http://127.0.0.1:8080", optionally with a path prefix). token is an API
// token ("ddk_..."); it may be empty for a server in loopback development
// mode. An invalid baseURL is reported by the first call.
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{
		token:      token,
		hc:         &http.Client{},
		userAgent:  DefaultUserAgent,
		backoffMin: 250 * time.Millisecond,
		backoffMax: 5 * time.Second,
		// The server pings every 15 s; three missed pings mean a dead
		// connection that TCP alone may take minutes to notice.
		streamIdle: 45 * time.Second,
		pollMin:    time.Second,
		pollMax:    5 * time.Second,
		// With the backoff above, 4–8 s in all: enough for a
		// restarting server or a replica's lost connection, short for
		// someone waiting.
		retries: DefaultRetries,
	}
	c.base, c.baseErr = parseBase(baseURL)
	for _, o := range opts {
		o(c)
	}
	return c
}

func parseBase(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, drydock.Errorf(drydock.EINVALID, "no server URL: set DRYDOCK_URL or --url (for example http://127.0.0.1:8080)")
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, drydock.Errorf(drydock.EINVALID, "server URL %q is not an http(s) URL such as http://127.0.0.1:8080", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}

// BaseURL returns the server URL the client talks to.
func (c *Client) BaseURL() string {
	if c.base == nil {
		return ""
	}
	return c.base.String()
}

// ConnError reports that the server could not be reached at all (refused,
// DNS, TLS, reset before an answer). Its code is EUNAVAILABLE, so
// drydock.IsRetryable holds for it.
type ConnError struct {
	URL string // the server's base URL
	Err error
}

func (e *ConnError) Error() string {
	cause := e.Err
	var ue *url.Error
	if errors.As(cause, &ue) {
		cause = ue.Err // the URL is named already
	}
	return fmt.Sprintf("cannot reach the Drydock server at %s: is `drydock server` running? (set DRYDOCK_URL or --url) [%v]", e.URL, cause)
}

func (e *ConnError) Unwrap() []error {
	return []error{e.Err, &drydock.Error{Code: drydock.EUNAVAILABLE, Message: "cannot reach the Drydock server at " + e.URL}}
}

// endpoint builds the URL of path (escaped, starting with "/") under the
// base.
func (c *Client) endpoint(path string, q url.Values) (string, error) {
	if c.baseErr != nil {
		return "", c.baseErr
	}
	unescaped, err := url.PathUnescape(path)
	if err != nil {
		return "", fmt.Errorf("request path %q: %w", path, err)
	}
	u := *c.base
	u.Path = c.base.Path + unescaped
	u.RawPath = c.base.EscapedPath() + path
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func jobPath(id string, rest string) (string, error) {
	if strings.TrimSpace(id) == "" {
		return "", drydock.Errorf(drydock.EINVALID, "job id is required")
	}
	return "/v1/jobs/" + url.PathEscape(id) + rest, nil
}

// do sends a request and returns the response of a 2xx answer; any other
// answer becomes a *drydock.Error.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body any, hdr http.Header) (*http.Response, error) {
	resp, err := c.send(ctx, method, path, q, body, hdr)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, c.decodeError(resp)
	}
	return resp, nil
}

// send sends a request and returns whatever answer comes back; only a
// request that gets no answer is an error.
func (c *Client) send(ctx context.Context, method, path string, q url.Values, body any, hdr http.Header) (*http.Response, error) {
	u, err := c.endpoint(path, q)
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
		hdr = hdr.Clone()
		if hdr == nil {
			hdr = http.Header{}
		}
		hdr.Set("Content-Type", "application/json")
	}
	return c.sendTo(ctx, method, u, path, rd, hdr)
}

// sendBody sends a request whose body is already encoded; hdr gives its
// Content-Type.
func (c *Client) sendBody(ctx context.Context, method, path string, body io.Reader, hdr http.Header) (*http.Response, error) {
	u, err := c.endpoint(path, nil)
	if err != nil {
		return nil, err
	}
	return c.sendTo(ctx, method, u, path, body, hdr)
}

func (c *Client) sendTo(ctx context.Context, method, u, path string, rd io.Reader, hdr http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		var pe *packError
		if errors.As(err, &pe) {
			return nil, pe // the local archive failed, not the connection
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, context.Cause(ctx))
		}
		return nil, &ConnError{URL: c.base.Redacted(), Err: err}
	}
	return resp, nil
}

// doJSON sends a request and decodes a 2xx JSON answer into out.
func (c *Client) doJSON(ctx context.Context, method, path string, q url.Values, body, out any) error {
	resp, err := c.do(ctx, method, path, q, body, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	head := &headBuffer{max: 4 << 10}
	if err := json.NewDecoder(io.TeeReader(resp.Body, head)).Decode(out); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s %s: %w", method, path, context.Cause(ctx))
		}
		if !isJSON(resp) {
			// A web server that answers every path, or a login page
			// of a proxy: say so rather than "invalid character '<'".
			return c.foreign(resp, head.Bytes())
		}
		return fmt.Errorf("decode answer of %s %s: %w", method, path, err)
	}
	return nil
}

// Job returns a job by id; ENOTFOUND if it does not exist or belongs to
// another token.
func (c *Client) Job(ctx context.Context, id string) (*drydock.Job, error) {
	p, err := jobPath(id, "")
	if err != nil {
		return nil, err
	}
	var j drydock.Job
	if err := c.doJSON(ctx, http.MethodGet, p, nil, nil, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// Cancel asks the server to cancel a job. A pending job comes back
// cancelled; a running one comes back running and stops shortly; a finished
// one comes back unchanged.
func (c *Client) Cancel(ctx context.Context, id string) (*drydock.Job, error) {
	p, err := jobPath(id, "/cancel")
	if err != nil {
		return nil, err
	}
	var j drydock.Job
	if err := c.doJSON(ctx, http.MethodPost, p, nil, nil, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// ListOptions selects a page of jobs. Zero values mean the server's defaults
// (every status, 50 jobs, the first page).
type ListOptions struct {
	Status []drydock.JobStatus
	// Metadata keeps the jobs whose metadata has every one of these pairs.
	Metadata map[string]string
	Limit    int
	Cursor   string
}

// JobPage is one page of a job list, newest first. NextCursor is empty on
// the last page.
type JobPage struct {
	Jobs       []*drydock.Job `json:"jobs"`
	NextCursor string         `json:"next_cursor"`
}

// Jobs returns one page of the jobs the token can see.
func (c *Client) Jobs(ctx context.Context, opts ListOptions) (*JobPage, error) {
	q := url.Values{}
	if len(opts.Status) > 0 {
		s := make([]string, len(opts.Status))
		for i, st := range opts.Status {
			s[i] = string(st)
		}
		q.Set("status", strings.Join(s, ","))
	}
	for _, k := range slices.Sorted(maps.Keys(opts.Metadata)) {
		q.Add("metadata", k+"="+opts.Metadata[k])
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Cursor != "" {
		q.Set("cursor", opts.Cursor)
	}
	var p JobPage
	if err := c.doJSON(ctx, http.MethodGet, "/v1/jobs", q, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// AllJobs yields every job matching opts, following cursors page by page
// (opts.Limit is the page size). It stops at the first error, which it
// yields with a nil job.
func (c *Client) AllJobs(ctx context.Context, opts ListOptions) iter.Seq2[*drydock.Job, error] {
	return func(yield func(*drydock.Job, error) bool) {
		for {
			p, err := c.Jobs(ctx, opts)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, j := range p.Jobs {
				if !yield(j, nil) {
					return
				}
			}
			// A cursor that does not move would loop forever on a buggy
			// server; treat it as the end.
			if p.NextCursor == "" || p.NextCursor == opts.Cursor || len(p.Jobs) == 0 {
				return
			}
			opts.Cursor = p.NextCursor
		}
	}
}

// EventPage is one page of a job's event log. Pass NextAfter as the next
// call's after. Done means the job is terminal and the log has no more
// events.
type EventPage struct {
	Events    []*drydock.Event `json:"events"`
	NextAfter int64            `json:"next_after"`
	Done      bool             `json:"done"`
}

// Events returns up to limit events of a job with a sequence number greater
// than after (limit 0 means the server's default).
func (c *Client) Events(ctx context.Context, id string, after int64, limit int) (*EventPage, error) {
	p, err := jobPath(id, "/events")
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var page EventPage
	if err := c.doJSON(ctx, http.MethodGet, p, q, nil, &page); err != nil {
		return nil, err
	}
	if page.NextAfter < after {
		page.NextAfter = after
	}
	return &page, nil
}

// Download streams a job's archived workspace into w and returns the bytes
// written. format is "tar.gz" (the default when empty) or "zip". A job whose
// workspace is not archived yet gives ECONFLICT. A stream cut short is an
// error, never a silently truncated archive.
func (c *Client) Download(ctx context.Context, id, format string, w io.Writer) (int64, error) {
	switch format {
	case "":
		format = "tar.gz"
	case "tar.gz", "zip":
	default:
		return 0, drydock.Errorf(drydock.EINVALID, "archive format %q: use \"tar.gz\" or \"zip\"", format)
	}
	p, err := jobPath(id, "/artifact."+format)
	if err != nil {
		return 0, err
	}
	hdr := http.Header{"Accept": {"*/*"}}
	resp, err := c.do(ctx, http.MethodGet, p, nil, nil, hdr)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			return n, fmt.Errorf("download %s: %w", id, context.Cause(ctx))
		}
		return n, fmt.Errorf("download %s: interrupted after %d bytes: %w", id, n, err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, fmt.Errorf("download %s: got %d of %d bytes", id, n, resp.ContentLength)
	}
	return n, nil
}
