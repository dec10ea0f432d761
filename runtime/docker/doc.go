// Package docker runs sandboxes as containers through the Docker Engine API,
// with API-version negotiation, so that one implementation serves Docker
// (20.10 and later) and Podman's Docker-compatible socket alike.
//
// Every sandbox is one container, created with the security defaults of the
// design: user 1000 in /workspace, all capabilities dropped,
// no-new-privileges, the engine's default seccomp profile, a read-only root
// filesystem, memory, CPU and pids limits, and no network interface. The
// engine's socket is never mounted. The engine's init runs as PID 1 and
// reaps orphans, so that a fork bomb's processes free their pids when they
// end.
//
// Sandboxes never get a network interface (--network none), whatever the
// spec's egress. Their only way out is the orchestrator's egress proxy
// (package egress), which enforces the job's allowlist on the host:
// EgressSocket names the unix socket it must listen on, in the sandbox's
// socket directory; toolboxd offers it inside the sandbox on
// 127.0.0.1:3128, and HTTP_PROXY, HTTPS_PROXY and ALL_PROXY point there
// (NO_PROXY keeps the sandbox's own loopback direct). Without a listener on
// the socket, nothing leaves the sandbox.
//
// toolboxd listens on a unix socket in a per-sandbox host directory
// (StateDir/<id>/toolbox, mounted at /run/toolbox), so the orchestrator
// reaches it without any network. The sandbox's random token is given to
// toolboxd in its environment and kept on the host in a 0600 file beside
// that directory (never in a label), where Get finds it again after an
// orchestrator restart. The directory is mode 0777 inside a 0700 parent:
// uid 1000 in the container (which is another uid on the host under
// rootless Podman) must create the socket, and no other host user can
// reach it through the parent.
//
// A warm sandbox (package pool) is handed to a job with Claim: toolboxd
// replaces its token and VNC password with fresh ones, and the new secrets
// and the job go to the secrets file, where Get and List find them (the
// drydock.job label they report is the claiming job's; the container's own
// label, fixed at create, still names the pool). The old token, which
// docker inspect shows in the container's environment, no longer works.
//
// /workspace, /tmp and /home/agent are size-limited tmpfs mounts. A tmpfs is
// the one size-limited writable filesystem that Docker and Podman both give
// without a quota-capable backing filesystem (overlay2 on xfs with pquota),
// which this machine and most hosts lack. Its cost: the workspace does not
// survive a container restart (the orchestrator archives it through toolboxd
// before destroying a sandbox, and restarts are not part of the lifecycle),
// and its pages count against the sandbox's memory limit and cannot be
// reclaimed. So the mounts are sized to hold together at most the limit
// minus a reserve for processes (tmpfsSizes), shrinking /tmp and then the
// workspace when the asked sizes do not fit: a full workspace is ENOSPC, not
// an OOM killer that ends every process, new ones included.
package docker
