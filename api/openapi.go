package api

import (
	_ "embed"
	"net/http"
)

// openapiDoc is written by hand from docs/API.md; TestOpenAPICoversRoutes
// fails when a route is missing from it or it names a route that is not
// served, and TestOpenAPIDescribesEventData when an event payload's
// component is not its root type's fields (DRYDOCK_DUMP_EVENT_SCHEMAS=file
// on that test writes them, in field order, for pasting in).
//
//go:embed openapi.json
var openapiDoc []byte

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openapiDoc)
}
