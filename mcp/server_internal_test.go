package mcp

import (
	"context"
	"testing"
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
