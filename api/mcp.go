package api

import (
	"net/http"

	"github.com/drydockhq/drydock/client"
	"github.com/drydockhq/drydock/mcp"
)

// The MCP endpoint: Streamable HTTP at POST /mcp, behind the
// same boundary (Host, Origin, JSON bodies) and authentication as every
// route. Its tools call this API through the Go client, in process
// (mcp.HandlerTransport), with the caller's own Authorization: MCP answers
// exactly what the API answers to that caller, and every rule of the API
// (ownership, limits, masking) holds for MCP without a second copy.

// mcpBaseHeader carries, from the MCP request to its tools, the base URL the
// API's answers build links from. It is set here on every request, never
// taken from the client.
const mcpBaseHeader = "X-Drydock-Mcp-Base"

func (s *Server) mcpRoutes() {
	// s.handler is built after the routes: look it up per request.
	self := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) })
	inProcess := &http.Client{Transport: mcp.HandlerTransport(self)}
	clientFor := func(h http.Header) *client.Client {
		token := ""
		if h != nil {
			token, _ = bearerToken(h.Get("Authorization"))
		}
		base := h.Get(mcpBaseHeader)
		return client.New(base, token, client.WithHTTPClient(inProcess), client.WithUserAgent("drydock-mcp"), client.WithRetries(0))
	}
	// A JSON-RPC message wraps a tool's arguments: room for a file of the
	// API's body limit once escaped; the API checks its own limit again.
	h := mcp.HTTPHandler(clientFor, mcp.Options{Version: s.cfg.Version, Logger: s.log.With("component", "mcp"), Stop: s.closing}, 2*s.cfg.MaxBodyBytes+64<<10)
	s.handle("POST /mcp", s.authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set(mcpBaseHeader, s.baseURL(r))
		h.ServeHTTP(w, r)
	})))
}
