package toolbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/unixsock"
)

// Client talks to one toolboxd. It keeps connections alive between calls, and
// every mutating call carries a fresh request id and is retried with the same
// id on a connection error, so the server runs it at most once. Calls that
// stream a request body (UploadTar) are not retried.
type Client struct {
	base    string
	token   string
	tr      *http.Transport
	hc      *http.Client
	retries int
	backoff time.Duration
}

// New returns a client for the toolboxd at ep ("unix" socket path or "tcp"
// host:port), authenticating with token.
func New(ep drydock.Endpoint, token string) *Client {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	base := "http://" + ep.Address
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", ep.Address)
	}
	if ep.Network == "unix" {
		base = "http://toolbox"
		// The socket's directory is the sandbox's (see runtime/docker):
		// a link planted there must not send this client's requests, and
		// its token, to another socket.
		dial = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return unixsock.DialWith(ctx, d, ep.Address)
		}
	}
	tr := &http.Transport{
		DialContext:         dial,
		MaxIdleConns:        32,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
		// Tar streams and files travel as they are; transparent gzip would
		// only cost CPU on both ends of a local socket.
		DisableCompression: true,
	}
	return &Client{
		base:    base,
		token:   token,
		tr:      tr,
		hc:      &http.Client{Transport: tr},
		retries: 4,
		backoff: 50 * time.Millisecond,
	}
}

// Close drops the idle connections.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// Transport reaches the toolboxd whatever the URL's host; with BaseURL it
// lets a reverse proxy (desktop VNC, file browsing) forward requests. The
// proxy must add the bearer token itself.
func (c *Client) Transport() http.RoundTripper { return c.tr }

// BaseURL is the URL that Transport resolves to the toolboxd.
func (c *Client) BaseURL() string { return c.base }

// call is one request of the API.
type call struct {
	method string
	path   string
	query  url.Values
	body   []byte    // replayable body
	stream io.Reader // streamed body; the call is not retried
	ctype  string
	// okStatus lists error statuses whose body the caller decodes itself.
	okStatus []int
}

// do sends the call, retrying on connection errors, and returns a response
// whose status is 2xx (or in okStatus); any other becomes a *drydock.Error.
func (c *Client) do(ctx context.Context, cl call) (*http.Response, error) {
	u := c.base + cl.path
	if len(cl.query) > 0 {
		u += "?" + cl.query.Encode()
	}
	var id string
	if cl.method != http.MethodGet && cl.method != http.MethodHead {
		id = newRequestID()
	}
	attempts := c.retries + 1
	if cl.stream != nil {
		attempts = 1
	}
	wait := c.backoff
	for attempt := 1; ; attempt++ {
		var body io.Reader
		switch {
		case cl.stream != nil:
			body = cl.stream
		case cl.body != nil:
			body = bytes.NewReader(cl.body)
		}
		req, err := http.NewRequestWithContext(ctx, cl.method, u, body)
		if err != nil {
			return nil, fmt.Errorf("toolbox %s %s: %w", cl.method, cl.path, err)
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		if id != "" {
			req.Header.Set(HeaderRequestID, id)
		}
		if cl.ctype != "" {
			req.Header.Set("Content-Type", cl.ctype)
		}
		resp, err := c.hc.Do(req)
		if err == nil {
			if resp.StatusCode < 300 || containsInt(cl.okStatus, resp.StatusCode) {
				return resp, nil
			}
			defer resp.Body.Close()
			return nil, responseError(resp)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("toolbox %s %s: %w", cl.method, cl.path, ctx.Err())
		}
		if attempt >= attempts {
			return nil, fmt.Errorf("toolbox %s %s: %w: %w", cl.method, cl.path,
				drydock.Errorf(drydock.EUNAVAILABLE, "toolbox is unreachable"), err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, fmt.Errorf("toolbox %s %s: %w", cl.method, cl.path, ctx.Err())
		}
		wait *= 2
	}
}

// doJSON sends v (if not nil) as JSON and decodes the reply into out (if not
// nil).
func (c *Client) doJSON(ctx context.Context, method, path string, query url.Values, v, out any) error {
	cl := call{method: method, path: path, query: query}
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %s request: %w", path, err)
		}
		cl.body, cl.ctype = b, "application/json"
	}
	resp, err := c.do(ctx, cl)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return decodeBody(resp, out)
}

func decodeBody(resp *http.Response, out any) error {
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("toolbox %s: decode reply: %w", resp.Request.URL.Path, err)
	}
	return nil
}

// responseError turns an error reply into a *drydock.Error with the server's
// code and message.
func responseError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var eb drydock.ErrorBody
	if json.Unmarshal(data, &eb) == nil && eb.Error.Code != "" {
		return eb.Error.Err()
	}
	return drydock.Errorf(drydock.CodeOfStatus(resp.StatusCode), "toolbox answered %s", resp.Status)
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func newRequestID() string { return strings.ToLower(rand.Text()) }

// Health checks that the daemon answers.
func (c *Client) Health(ctx context.Context) error {
	var h Health
	if err := c.doJSON(ctx, http.MethodGet, "/v1/health", nil, nil, &h); err != nil {
		return err
	}
	if h.Status != "ok" {
		return drydock.Errorf(drydock.EUNAVAILABLE, "toolbox health is %q", h.Status)
	}
	return nil
}

// Ready returns the readiness of every component; an unready sandbox is not
// an error.
func (c *Client) Ready(ctx context.Context) (*Readiness, error) {
	resp, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/ready", okStatus: []int{http.StatusServiceUnavailable}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r Readiness
	if err := decodeBody(resp, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// WaitReady polls until the core (files, shell) and the named components
// are ready, or ctx ends. Connection errors count as not ready yet, since
// the daemon may still be starting.
func (c *Client) WaitReady(ctx context.Context, components ...string) error {
	wait := 5 * time.Millisecond
	var last string
	for {
		r, err := c.Ready(ctx)
		switch {
		case err != nil:
			last = drydock.ErrorMessage(err)
			if code := drydock.ErrorCode(err); code == drydock.EUNAUTHORIZED {
				return err
			}
		default:
			last = notReady(r, components)
			if last == "" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", drydock.Errorf(drydock.EUNAVAILABLE, "toolbox is not ready: %s", last), ctx.Err())
		case <-time.After(wait):
		}
		wait = min(wait*2, 200*time.Millisecond)
	}
}

// notReady says what keeps r from being ready for components, or "".
func notReady(r *Readiness, components []string) string {
	var why []string
	for _, c := range r.Components {
		if !c.Ready && (c.Name == ComponentFiles || c.Name == ComponentShell || containsString(components, c.Name)) {
			why = append(why, c.Name+": "+c.Message)
		}
	}
	for _, name := range components {
		if _, ok := r.Component(name); !ok {
			why = append(why, name+": not provided by this sandbox")
		}
	}
	if len(why) == 0 && !r.Ready {
		why = append(why, "not ready")
	}
	return strings.Join(why, "; ")
}

func containsString(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// Info returns the daemon's versions, profile and workspace.
func (c *Client) Info(ctx context.Context) (*Info, error) {
	var i Info
	if err := c.doJSON(ctx, http.MethodGet, "/v1/info", nil, nil, &i); err != nil {
		return nil, err
	}
	return &i, nil
}
