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
	local host=$1 pid
	mkdir -p "$DRYDOCK_RUN_DIR" "$(dirname "$DOCKERD_LOG")"
	# dockerd refuses to start over a pidfile whose pid is alive.
	our_dockerd >/dev/null || rm -f "$DOCKERD_PIDFILE"
	# gVisor's runsc is not registered here yet: under it the fork and
	# memory bombs end the sandbox instead of being contained, and egress,
	# Jupyter and the live desktop are untested (issue 17). The server's
	# --isolation auto then runs sandboxes under runc and says so.
	log "starting dockerd --live-restore on $host (log: $DOCKERD_LOG)"
	nohup "${DOCKERD:-dockerd}" --host "$host" --live-restore --pidfile "$DOCKERD_PIDFILE" \
		>"$DOCKERD_LOG" 2>&1 </dev/null &
	echo "$host" >"$DOCKERD_HOSTFILE"
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

# gVisor's runsc (issue 17), built from the Go module proxy: no binary is
# published where these machines reach, and Debian's (2022) lacks the
# systrap platform. It must be static: runsc re-executes itself inside an
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
