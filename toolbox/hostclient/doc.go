// Package hostclient is what the host side keeps around toolbox.Client and
// toolboxd never needs: Clients, one client per sandbox for the whole
// orchestrator, and ClaimOnce, the host's half of handing a warm sandbox to
// a job, for runtimes that keep a directory per sandbox.
//
// It lives apart from package toolbox because cmd/toolboxd links that
// package for its wire types: code here would be weight and attack surface
// in every sandbox. layering_test.go keeps it out of toolboxd.
package hostclient
