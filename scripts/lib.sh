# Shared helpers for scripts/*.sh. Source it; do not run it.

log() { printf '==> %s\n' "$*" >&2; }

# apt_install PKG...: installs the Debian packages that are missing, quietly.
apt_install() {
	missing=""
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "missing Debian packages:$missing (run as root, or install them with apt-get)" >&2
		return 1
	fi
	log "installing:$missing"
	if [ ! -f /var/lib/apt/lists/.drydock-updated ] || [ -n "$(find /var/lib/apt/lists/.drydock-updated -mmin +1440 2>/dev/null)" ]; then
		apt-get -o DPkg::Lock::Timeout=900 update -qq && touch /var/lib/apt/lists/.drydock-updated
	fi
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends $missing >/dev/null
}

# ensure_npm: npm, which names the registry the sandbox image takes Node.js
# from (npm config get registry) and which the SDK tests use. Debian's
# nodejs (18) comes without npm, which is the separate package npm;
# NodeSource's nodejs bundles its own npm and conflicts with Debian's. So
# Debian's npm is installed only when npm is still missing after nodejs,
# and never beside a nodejs that is not Debian's.
ensure_npm() {
	command -v npm >/dev/null 2>&1 && return 0
	v=$(dpkg-query -W -f='${Version}' nodejs 2>/dev/null || true)
	case "$v" in
	*nodesource*)
		# Warned, not fatal: the tests that need npm skip without it.
		echo "warning: NodeSource's nodejs $v is installed without its npm: reinstall it (apt-get install --reinstall nodejs); Debian's npm conflicts with it" >&2
		return 0
		;;
	esac
	apt_install npm
}

# ensure_go: Go 1.26 at /usr/local/go (the machine image provides it).
ensure_go() {
	if ! command -v go >/dev/null 2>&1; then
		if [ -x /usr/local/go/bin/go ]; then
			export PATH="/usr/local/go/bin:$PATH"
		else
			echo "Go is not installed: install Go 1.26 to /usr/local/go (https://go.dev/doc/install)" >&2
			return 1
		fi
	fi
}

# The dockerd that make run starts when no engine answers: its pidfile and the
# host it serves live here, so that make stop finds it (and only it).
DRYDOCK_RUN_DIR="${DRYDOCK_RUN_DIR:-/run/drydock}"
DOCKERD_PIDFILE="$DRYDOCK_RUN_DIR/dockerd.pid"
DOCKERD_HOSTFILE="$DRYDOCK_RUN_DIR/dockerd.host"
DOCKERD_LOG="${DOCKERD_LOG:-/var/log/drydock-dockerd.log}"

# engine_answers HOST: the Docker API on unix socket HOST answers a ping.
engine_answers() {
	case "$1" in
	tcp://*) curl -sf --max-time 2 "http://${1#tcp://}/_ping" >/dev/null 2>&1 ;;
	*) curl -sf --max-time 2 --unix-socket "${1#unix://}" http://docker/_ping >/dev/null 2>&1 ;;
	esac
}

# running PID: the process exists and has not exited (a zombie whose parent
# has not reaped it yet has).
running() {
	[ -e "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# our_dockerd: prints the pid of the dockerd start_dockerd started, if it
# still runs. The name check keeps a pid reused by another process safe.
our_dockerd() {
	local pid
	[ -f "$DOCKERD_PIDFILE" ] || return 1
	pid=$(cat "$DOCKERD_PIDFILE" 2>/dev/null) || return 1
	case "$pid" in '' | *[!0-9]*) return 1 ;; esac
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ] && running "$pid" || return 1
	echo "$pid"
}

# start_dockerd HOST: starts a dockerd of our own serving unix socket HOST,
# with --live-restore (an engine restart, a package upgrade included, then
# keeps running jobs) and a pidfile for stop_dockerd, and waits until it
# answers. DOCKERD names the binary (tests give a fake).
start_dockerd() {
	local host=$1 pid config
	mkdir -p "$DRYDOCK_RUN_DIR" "$(dirname "$DOCKERD_LOG")"
	# dockerd refuses to start over a pidfile whose pid is alive.
	our_dockerd >/dev/null || rm -f "$DOCKERD_PIDFILE"
	config=$(dockerd_config) || config=""
	log "starting dockerd --live-restore on $host (log: $DOCKERD_LOG)"
	nohup "${DOCKERD:-dockerd}" --host "$host" --live-restore --pidfile "$DOCKERD_PIDFILE" \
		${config:+--config-file "$config"} >"$DOCKERD_LOG" 2>&1 </dev/null &
	echo "$host" >"$DOCKERD_HOSTFILE"
	DOCKERD_STARTED=1
	for _ in $(seq 120); do
		if engine_answers "$host"; then
			pid=$(our_dockerd) || pid="?"
			log "dockerd (pid $pid) keeps running after the server stops; stop it with: make stop"
			return 0
		fi
		sleep 0.5
	done
	echo "dockerd did not answer on $host within 60 s; last lines of $DOCKERD_LOG:" >&2
	tail -n 20 "$DOCKERD_LOG" >&2
	return 1
}

# The daemon.json of the dockerd make run starts, and the operator's own,
# which a dockerd started without --config-file reads.
DOCKERD_CONFIG="$DRYDOCK_RUN_DIR/daemon.json"
DOCKERD_SYSTEM_CONFIG="${DOCKERD_SYSTEM_CONFIG:-/etc/docker/daemon.json}"

# runsc_runtimes RUNSC: the daemon.json entry that registers RUNSC as the
# runtime "runsc". --host-uds=all lets the sandbox use the host's unix
# sockets Drydock bind-mounts (toolboxd's, the egress proxy's). Not
# --oci-seccomp: with it runsc applies the container's seccomp profile,
# but its clone3 answer is EPERM, so glibc's posix_spawn, system() and
# popen() fail instead of falling back to clone (os.system('true') gave
# 127, and the code kernel never started); gVisor's own kernel serves
# the keyring and user namespaces instead.
runsc_runtimes() {
	printf '"runtimes": {"runsc": {"path": "%s", "runtimeArgs": ["--host-uds=all"]}}' "$1"
}

# wants_gvisor: false when the operator chose runc (DRYDOCK_ISOLATION=runc,
# the server's own setting), which spares building runsc.
wants_gvisor() {
	[ "${DRYDOCK_ISOLATION:-auto}" != runc ]
}

# owner_only PATH: PATH and every directory above it belong to root or to
# this user and no one else can write them (a sticky directory such as /tmp
# excepted, whose entries only their owner replaces). dockerd runs the
# runtime it registers as root: a runsc that another user can replace (a
# cache under a HOME kept by sudo -E) would be theirs to run as root.
owner_only() {
	local p me st mode go
	p=$(readlink -f "$1") || return 1
	me=$(id -u)
	while :; do
		st=$(stat -c '%u %a' "$p" 2>/dev/null) || return 1
		case "${st%% *}" in 0 | "$me") ;; *) return 1 ;; esac
		mode=${st#* }
		go=${mode#"${mode%??}"} # the group and other digits
		case "$go" in
		*[2367]*)
			# Writable by others: only a sticky directory will do.
			[ -d "$p" ] && [ ${#mode} -eq 4 ] || return 1
			case "${mode%???}" in 1 | 3 | 5 | 7) ;; *) return 1 ;; esac
			;;
		esac
		[ "$p" = / ] && return 0
		p=$(dirname "$p")
	done
}

# dockerd_config: prints the daemon.json (none: dockerd's default) that
# registers gVisor's runsc (built once, cached) in the dockerd make run
# starts, so that the server's --isolation auto picks it. The operator's
# /etc/docker/daemon.json is never rewritten, nor dropped by a
# --config-file of ours: with one, dockerd reads it unchanged and the lines
# to add are printed. A runsc that cannot be built (no Go module proxy)
# leaves sandboxes under runc, with a warning; make run goes on.
dockerd_config() {
	local runsc
	wants_gvisor || return 0
	if ! runsc=$(ensure_runsc); then
		log "warning: gVisor's runsc could not be built (is the Go module proxy reachable?): sandboxes run under runc, the server says so at start and on /readyz"
		return 0
	fi
	if ! owner_only "$runsc"; then
		unsafe_runsc "$runsc"
		return 0
	fi
	if [ -s "$DOCKERD_SYSTEM_CONFIG" ] && [ -n "$(tr -d ' \t\r\n{}' <"$DOCKERD_SYSTEM_CONFIG")" ]; then
		if grep -q '"runsc"' "$DOCKERD_SYSTEM_CONFIG"; then
			log "gVisor: $DOCKERD_SYSTEM_CONFIG registers a runtime \"runsc\"; dockerd reads it"
		else
			runsc_advice "$runsc" "$DOCKERD_SYSTEM_CONFIG" "kill -HUP \$(cat $DOCKERD_PIDFILE)"
		fi
		return 0
	fi
	if ! { mkdir -p "$(dirname "$DOCKERD_CONFIG")" && printf '{%s}\n' "$(runsc_runtimes "$runsc")" >"$DOCKERD_CONFIG"; }; then
		log "warning: could not write $DOCKERD_CONFIG: sandboxes run under runc"
		return 0
	fi
	log "gVisor: runsc ($runsc) registered as the runtime \"runsc\" in $DOCKERD_CONFIG"
	echo "$DOCKERD_CONFIG"
}

# runsc_advice RUNSC CONFIG RELOAD: says how to register RUNSC in an
# engine's daemon.json CONFIG that make run does not write, and that
# sandboxes run under runc until then.
runsc_advice() {
	log "warning: gVisor is not registered with this engine, so sandboxes run under runc (the server warns at start and on /readyz). To run them under gVisor, add this key to $2:"
	printf '    %s\n' "$(runsc_runtimes "$1")" >&2
	log "then reload the engine ($3) and restart the server"
}

# engine_has_runsc HOST: the engine at HOST lists a runtime named runsc.
engine_has_runsc() {
	local info
	case "$1" in
	tcp://*) info=$(curl -sf --max-time 5 "http://${1#tcp://}/info" 2>/dev/null) ;;
	*) info=$(curl -sf --max-time 5 --unix-socket "${1#unix://}" http://docker/info 2>/dev/null) ;;
	esac
	printf '%s' "$info" | grep -q '"runsc":'
}

# check_gvisor HOST: says what isolation the server's --isolation auto will
# find on the engine at HOST, and for an engine make run did not start and
# does not configure (a system dockerd), how to add gVisor to it.
check_gvisor() {
	local runsc
	if engine_has_runsc "$1"; then
		log "gVisor: the engine has runsc; sandboxes run under gVisor (--isolation auto)"
		return 0
	fi
	wants_gvisor || return 0
	if our_dockerd >/dev/null; then
		# dockerd_config said why when it started this engine; one an
		# earlier make run started has no runsc until it starts again.
		[ -n "${DOCKERD_STARTED:-}" ] ||
			log "the dockerd an earlier make run started has no runsc: sandboxes run under runc (make stop, then make run, registers it)"
		return 0
	fi
	if ! runsc=$(ensure_runsc); then
		log "warning: this engine has no runtime runsc and gVisor's runsc could not be built (is the Go module proxy reachable?): sandboxes run under runc"
		return 0
	fi
	if ! owner_only "$runsc"; then
		unsafe_runsc "$runsc"
		return 0
	fi
	runsc_advice "$runsc" "$DOCKERD_SYSTEM_CONFIG" "systemctl reload docker, or kill -HUP the dockerd pid"
}

# unsafe_runsc RUNSC: says why RUNSC is not registered.
unsafe_runsc() {
	log "warning: $1 or a directory above it belongs to, or can be written by, another user, who could replace what dockerd runs as root: not registered, sandboxes run under runc. Build it where only root writes (HOME=/root make run, or DRYDOCK_RUNSC_PATH)"
}

# stop_dockerd: stops the dockerd start_dockerd started, never another
# engine. --live-restore keeps containers running without their daemon, so
# Drydock's sandboxes are removed first (stop the server before this).
stop_dockerd() {
	local pid host ids id
	if ! pid=$(our_dockerd); then
		rm -f "$DOCKERD_PIDFILE" "$DOCKERD_HOSTFILE"
		log "no dockerd started by make run is running (an engine make run did not start is left alone)"
		return 0
	fi
	host=$(cat "$DOCKERD_HOSTFILE" 2>/dev/null || echo unix:///var/run/docker.sock)
	if engine_answers "$host"; then
		ids=$(curl -sf --max-time 10 --unix-socket "${host#unix://}" -G http://docker/containers/json \
			--data-urlencode all=1 --data-urlencode 'filters={"label":["drydock.managed=true"]}' |
			grep -o '"Id":"[0-9a-f]*"' | cut -d'"' -f4) || true
		[ -z "$ids" ] || log "removing Drydock's sandboxes on $host (a server still running loses their jobs)"
		for id in $ids; do
			log "removing sandbox container ${id:0:12}"
			curl -sf --max-time 30 --unix-socket "${host#unix://}" -X DELETE "http://docker/containers/$id?force=1&v=1" >/dev/null ||
				echo "could not remove container $id" >&2
		done
	fi
	log "stopping dockerd (pid $pid)"
	kill -TERM "$pid"
	for _ in $(seq 60); do
		running "$pid" || break
		sleep 0.5
	done
	if running "$pid"; then
		echo "dockerd (pid $pid) still runs after 30 s; sending SIGKILL" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$DOCKERD_PIDFILE" "$DOCKERD_HOSTFILE"
	log "dockerd stopped"
}

# gVisor's runsc (the default isolation), built from the Go module proxy:
# no binary is published where these machines reach, and Debian's (2022)
# lacks the systrap platform. It must be static: runsc re-executes itself inside an
# empty chroot, where a dynamically linked build finds no loader and every
# start fails with "fork/exec /proc/self/exe: no such file or directory".
RUNSC_VERSION="${DRYDOCK_RUNSC_VERSION:-v0.0.0-20260905035102-160fafc42237}"

# ensure_runsc: prints the path of runsc, building it once per version into
# the cache (about 1 to 3 minutes on 2 cores).
ensure_runsc() {
	if [ -n "${DRYDOCK_RUNSC_PATH:-}" ]; then
		echo "$DRYDOCK_RUNSC_PATH" # an operator's own build
		return 0
	fi
	local dir="${XDG_CACHE_HOME:-$HOME/.cache}/drydock/runsc/$RUNSC_VERSION"
	if [ ! -x "$dir/runsc" ] || head -c 8192 "$dir/runsc" | grep -q "ld-linux" || ! "$dir/runsc" --version >/dev/null 2>&1; then
		ensure_go || return 1
		log "building gVisor's runsc $RUNSC_VERSION (once per version)"
		mkdir -p "$dir"
		rm -f "$dir/runsc"
		CGO_ENABLED=0 GOBIN="$dir" GOFLAGS=-mod=mod go install "gvisor.dev/gvisor/runsc@$RUNSC_VERSION" >&2 || return 1
	fi
	echo "$dir/runsc"
}

# ensure_runsc_shim: prints the path of containerd-shim-runsc-v1, gVisor's
# containerd shim (a Kubernetes node's RuntimeClass handler runs pods
# through it), built once per version from the same module as runsc, into
# the same cache directory; its runsc.toml names the runsc to run. Static
# like runsc.
#
# It is built from a copy of the module with one line changed: the shim
# lowers its own oom_score_adj to -999 and gives up when it may not, which
# is so wherever CAP_SYS_RESOURCE is missing from the bounding set (these
# test machines: "failed to set OOM Score on shim: permission denied", and
# no pod starts). Built this way it keeps the score it has, as containerd's
# own shims do in a user namespace; it says nothing, for containerd reads
# the shim's start output as its address. (A build overlay cannot replace
# a file in the module cache, hence the copy.)
ensure_runsc_shim() {
	if [ -n "${DRYDOCK_RUNSC_SHIM_PATH:-}" ]; then
		echo "$DRYDOCK_RUNSC_SHIM_PATH" # an operator's own build
		return 0
	fi
	local dir="${XDG_CACHE_HOME:-$HOME/.cache}/drydock/runsc/$RUNSC_VERSION" shim mod src file
	shim="$dir/containerd-shim-runsc-v1"
	if [ ! -x "$shim" ] || head -c 8192 "$shim" | grep -q "ld-linux" || ! "$shim" -v >/dev/null 2>&1; then
		ensure_go || return 1
		log "building gVisor's containerd-shim-runsc-v1 $RUNSC_VERSION (once per version)"
		mod=$(cd / && GOFLAGS=-mod=mod go mod download -json "gvisor.dev/gvisor@$RUNSC_VERSION" |
			sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
		[ -n "$mod" ] && [ -f "$mod/go.mod" ] || { echo "go mod download gvisor.dev/gvisor@$RUNSC_VERSION gave no source" >&2; return 1; }
		# A directory and an output of this build's own: two test runs
		# starting at once each build, and the last rename wins.
		mkdir -p "$dir"
		src=$(mktemp -d "$dir/shim.src.XXXXXX") || return 1
		cp -r "$mod/." "$src"
		chmod -R u+w "$src"
		file="$src/pkg/shim/v1/manager.go"
		sed -i 's/^\t\treturn shim.BootstrapParams{}, fmt.Errorf("failed to set OOM Score on shim: %w", err)$/\t\t_ = err \/\/ drydock: keeping the score it has/' "$file"
		if ! grep -q "drydock: keeping the score it has" "$file"; then
			echo "ensure_runsc_shim: $RUNSC_VERSION changed the OOM score line of pkg/shim/v1/manager.go; update the patch" >&2
			rm -rf "$src"
			return 1
		fi
		(cd "$src" && CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod go build -trimpath -o "$src/containerd-shim-runsc-v1" ./shim) >&2 || { rm -rf "$src"; return 1; }
		mv -f "$src/containerd-shim-runsc-v1" "$shim"
		rm -rf "$src"
	fi
	echo "$shim"
}
