package main

import (
	"fmt"
	"log/slog"

	"github.com/drydockhq/drydock/mcp"
	"github.com/drydockhq/drydock/termtext"
)

// MCPCmd serves the Model Context Protocol on stdin and stdout for an MCP
// client that starts it (Claude Code, Cursor, VS Code), as a client of a
// running server: every tool is a call of the HTTP API with DRYDOCK_URL and
// DRYDOCK_TOKEN.
type MCPCmd struct{}

func (c *MCPCmd) Run(g *Globals) error {
	ctx, _, stop := g.signalContext()
	defer stop()
	// stdout is the protocol's: what people should read goes to stderr,
	// which MCP clients show in their logs.
	logger := slog.New(slog.NewTextHandler(g.errw(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	fmt.Fprintf(g.errw(), "drydock mcp: serving the Model Context Protocol on stdio for %s\n", termtext.Line(g.URL))
	return mcp.Serve(ctx, g.Client(), g.in(), g.out(), mcp.Options{Version: version, Logger: logger})
}
