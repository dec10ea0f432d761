// Package local is a drydock.Runtime named "local" that serves toolboxd
// in-process, one unix socket per sandbox, over a directory on the host.
//
// # NO ISOLATION
//
// A "local" sandbox is not a sandbox. Commands run as the orchestrator's own
// user, on the host, with the host's network, files and processes in reach;
// resources, egress rules and the desktop profile are ignored. The file API
// is still confined to the workspace directory, but a shell command can go
// anywhere. Use this runtime for tests and development only, never for
// untrusted tasks.
//
// # Layout
//
// Each sandbox is a directory <root>/<id>:
//
//	sandbox.json  id, job, profile, labels, env, creation time (0600)
//	token         the toolboxd token (0600)
//	workspace/    the workspace the agent works in
//	state/        toolboxd's scratch files
//	toolbox.sock  the toolboxd socket
//	claimed       the job that claimed a warm sandbox (see Claim), created once
//
// A unix socket path must stay under 108 bytes. When <root> is too deep for
// that, sockets go to a short directory under os.TempDir() named after a hash
// of the root (drydock-local-<hash>/<id>.sock), or to Options.SocketDir.
//
// Sandboxes outlive the process: a new Runtime over the same root finds
// them, and Get starts serving one again (with its old token) when nothing
// answers on its socket, which is how a job continues after an orchestrator
// restart. Shell sessions do not survive a restart; files do.
package local
