// Package mcp is Drydock's Model Context Protocol server: the
// tools, resources and progress notifications that let an MCP client
// (Claude Code, Cursor, VS Code, an agent framework) schedule and follow
// jobs, read their workspaces and diffs, message their agents, and run
// commands in sandboxes held for the caller (agent "none").
//
// Every tool is a call of the Go client (package client) of the HTTP API,
// so MCP sees exactly what the API answers: the same authentication,
// ownership, limits, secret masking and error messages. The two transports
// differ only in the client they hand the tools:
//
//   - stdio (drydock mcp): one client of a running server, from
//     DRYDOCK_URL and DRYDOCK_TOKEN;
//   - Streamable HTTP at /mcp on the API server: per request, a client whose
//     transport is the API's own handler in process (HandlerTransport),
//     carrying the caller's Authorization header.
package mcp
