// Package sdk holds the Drydock SDKs for TypeScript (sdk/typescript) and
// Python (sdk/python). It has no Go API: its tests run both SDKs' own tests
// against a real server and keep both in step with the API's OpenAPI
// document (api/openapi.json).
//
// After a change to the document, regenerate the SDKs' types with
// `make sdk` (or `go generate ./sdk`), then add what a new route needs to
// each client by hand: sdk_test.go names what is missing.
package sdk

//go:generate go run ./internal/gensdk -sdk .
