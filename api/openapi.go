package api

import (
	_ "embed"
	"net/http"
)

// openapiDoc is written by hand from docs/API.md; TestOpenAPICoversRoutes
// fails when a route is missing from it or it names a route that is not
// served.
//
//go:embed openapi.json
var openapiDoc []byte

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openapiDoc)
}
