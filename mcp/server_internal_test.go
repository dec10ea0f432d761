package mcp

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call that came over HTTP ends when its request does: the SDK's handler
// context outlives a client that hung up (a stateless server never hears
// its cancel notification), so wait_job would otherwise poll on for up to
// ten minutes for nobody.
func TestCallsEndWithTheirHTTPRequest(t *testing.T) {
	t.Parallel()
	req, hangUp := context.WithCancel(t.Context())
	handler := context.WithValue(context.WithoutCancel(req), requestKey{}, req)
	ctx, done := withRequest(handler)
	defer done()
	if ctx.Err() != nil {
		t.Fatal("ended before the request did")
	}
	hangUp()
	<-ctx.Done()
	if got := context.Cause(ctx).Error(); got != "the client hung up" {
		t.Errorf("cause %q", got)
	}
	// On stdio there is no request: the call's own context rules.
	plain, stop := withRequest(t.Context())
	defer stop()
	if plain.Err() != nil {
		t.Error("a stdio call ended by itself")
	}
}

// A long call (run_command) tells a client that asked for progress that
// it is still at work, so that the client's own timeout does not end it.
func TestLongCallsSendHeartbeats(t *testing.T) {
	heartbeatEvery = time.Millisecond // not parallel: the other tests keep 15 s
	defer func() { heartbeatEvery = 15 * time.Second }()
	got := make(chan *sdk.ProgressNotificationParams, 16)
	s := sdk.NewServer(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "slow"}, func(ctx context.Context, req *sdk.CallToolRequest, _ any) (*sdk.CallToolResult, any, error) {
		stop := heartbeat(ctx, req, "job x: the command is running")
		defer stop()
		for range 2 {
			<-got // the client heard one
		}
		return text("done"), nil, nil
	})
	c := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			select {
			case got <- req.Params:
			default:
			}
		},
	})
	st, ct := sdk.NewInMemoryTransports()
	if _, err := s.Connect(t.Context(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := c.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &sdk.CallToolParams{Name: "slow", Arguments: map[string]any{}}
	params.SetProgressToken("tok")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("slow: %v %+v", err, res)
	}
}

// The SDK's per-session Info lines (every request, on the stateless HTTP
// endpoint) stay out of the server's log; its warnings reach it.
func TestSDKLogsOnlyWarnings(t *testing.T) {
	t.Parallel()
	var buf strings.Builder
	l := sdkLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.Info("server session connected")
	l.With("component", "mcp").Warn("calling tools/call: unknown tool")
	if strings.Contains(buf.String(), "session connected") || !strings.Contains(buf.String(), "unknown tool") {
		t.Errorf("log: %q", buf.String())
	}
}
