// Package api serves Drydock's HTTP API: the seed-compatible routes
// (/schedule, /submit, /status/{id}), the full /v1 API, operations endpoints
// (/healthz, /readyz, /metrics, /openapi.json), bearer-token auth and the one
// table that maps error codes to HTTP statuses (error.go). docs/API.md is the
// contract; openapi.json is its machine-readable form and a test keeps it in
// step with the routes.
package api
