package mcp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/drydockhq/drydock/client"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ClientFor returns the API client that acts for the caller of one MCP
// request. header is the HTTP request's header on the Streamable HTTP
// transport (its Authorization is the caller's), nil on stdio.
type ClientFor func(header http.Header) *client.Client

// Options configure the MCP server.
type Options struct {
	// Version is the server's version, reported at initialisation.
	Version string
	// Logger receives the SDK's own log; nil discards it.
	Logger *slog.Logger
	// Stop, when closed, ends waits (wait_job) early with an answer that
	// says to call again: the server is shutting down and its open
	// requests should finish.
	Stop <-chan struct{}
}

// instructions tell a client's model what the server is for.
const instructions = `Drydock runs coding agents in isolated sandboxes. Schedule a job with a task (schedule_job), follow it with wait_job or get_job (get_events shows what the agent did), then read its workspace (list_files, read_file) and its changes (get_diff). send_message steers a running agent or continues a finished job. To get a sandbox for yourself instead of an agent, schedule with agent "none", then use run_command and write_file on it until its timeout or cancel_job. Every result names the job id it concerns.`

// NewServer returns the MCP server with Drydock's tools and resources; for
// each request it asks clientFor for the client that acts for the caller.
func NewServer(clientFor ClientFor, opts Options) *sdk.Server {
	if opts.Version == "" {
		opts.Version = "dev"
	}
	logger := slog.New(slog.DiscardHandler)
	if opts.Logger != nil {
		// The SDK says at Info level that each session connects and ends:
		// on the stateless HTTP endpoint that is every request.
		logger = slog.New(warnings{opts.Logger.Handler()})
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "drydock", Title: "Drydock", Version: opts.Version}, &sdk.ServerOptions{
		Instructions: instructions,
		Logger:       logger,
		// Tools and resources are fixed: no list-changed notifications.
		Capabilities: &sdk.ServerCapabilities{
			Tools:     &sdk.ToolCapabilities{},
			Resources: &sdk.ResourceCapabilities{},
		},
	})
	t := &tools{clientFor: clientFor, stop: opts.Stop}
	t.register(s)
	t.registerResources(s)
	return s
}

// Serve runs the server over newline-delimited JSON-RPC on in and out (the
// stdio transport: a client's stdin and stdout) until ctx ends or the
// client closes in, acting through c for every request.
func Serve(ctx context.Context, c *client.Client, in io.Reader, out io.Writer, opts Options) error {
	s := NewServer(func(http.Header) *client.Client { return c }, opts)
	err := s.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
	if ctx.Err() != nil || errors.Is(err, io.EOF) {
		return nil // the client went away or the user stopped us: a clean end
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// HTTPHandler is the Streamable HTTP endpoint: stateless (every POST
// carries its own JSON-RPC message, with no session held in memory), so
// that any replica of the API answers any request and nothing is left
// behind by clients that go away. maxBody bounds a request's body.
func HTTPHandler(clientFor ClientFor, opts Options, maxBody int64) http.Handler {
	s := NewServer(clientFor, opts)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{
		Stateless:           true,
		Logger:              sdkLogger(opts.Logger),
		MaxRequestBodyBytes: maxBody,
		// The API's boundary refuses foreign Hosts and Origins before the
		// route (its own rules: a loopback server answers loopback names
		// and --public-url's host); the SDK's cruder rule would refuse a
		// reverse proxy on the same machine that keeps the Host.
		DisableLocalhostProtection: true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestKey{}, r.Context())))
	})
}

// requestKey holds the HTTP request's context in the contexts the SDK gives
// tool handlers. Those outlive a client that hung up (a stateless server
// never hears its cancel notification), so a long call (wait_job) ends
// with the request instead (withRequest).
type requestKey struct{}

// withRequest returns ctx cancelled also when the HTTP request that
// carried the call ends; on stdio ctx as it is.
func withRequest(ctx context.Context) (context.Context, context.CancelFunc) {
	rc, ok := ctx.Value(requestKey{}).(context.Context)
	if !ok {
		return context.WithCancel(ctx)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(rc, func() { cancel(errors.New("the client hung up")) })
	return ctx, func() { stop(); cancel(nil) }
}

// warnings passes on records of level Warn and above.
type warnings struct{ slog.Handler }

func (w warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnings) WithAttrs(a []slog.Attr) slog.Handler { return warnings{w.Handler.WithAttrs(a)} }
func (w warnings) WithGroup(n string) slog.Handler      { return warnings{w.Handler.WithGroup(n)} }

func sdkLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	return slog.New(warnings{l.Handler()})
}
