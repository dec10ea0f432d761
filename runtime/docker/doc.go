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
// reaches it without any network. The sandbox's random token is kept on
// the host in a 0600 file beside that directory (never in a label or the
// environment), where Get finds it again after an orchestrator restart;
// toolboxd gets it through a boot secrets file that it reads and removes
// as it starts.
//
// That directory is the one host directory a sandbox sees, so it must
// never be a way onto the host's disk. It is created 0777 inside a 0700
// parent, because toolboxd (uid 1000 in the container, another uid on the
// host under rootless Podman) must create its socket and remove the boot
// secrets there. Create then waits until toolboxd listens and seals the
// directory (sockdir.go): through a descriptor opened with O_NOFOLLOW it
// is chowned to the orchestrator's user and made 0755, the boot secrets
// are removed if still there, and anything but toolboxd's socket fails the
// Create (a file made before the seal could be held open and filled). From
// then on the sandbox can connect to the sockets there and nothing else:
// it cannot create, fill, rename or replace an entry. The seal is a mode
// on a host directory, so it survives orchestrator restarts (Get and
// reattaching need nothing), warm sandboxes are sealed before the pool
// sees them, and Destroy and PruneStateDirs remove the directory as
// before. A tmpfs mounted by the host with a size cap was the other way:
// it needs privileges a rootless orchestrator lacks, and a mount left by
// a crash blocks the directory's removal. Sandboxes created by an older
// Drydock keep a writable directory until they end. Host code that works
// in the directory never follows a link there anyway (package unixsock,
// os.RemoveAll).
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
