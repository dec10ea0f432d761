// Package server is toolboxd's HTTP API: files confined to the workspace,
// persistent bash sessions, one-shot processes with streamed output, health
// and readiness, and the routes of the optional desktop and code services,
// which other packages plug in through the Desktop and CodeRunner
// interfaces. The wire types and the route table are in package toolbox.
//
// A Server is an http.Handler; cmd/toolboxd serves it inside a sandbox and
// runtime/local serves it in-process for tests and development.
package server
