#!/bin/sh
# Starts a private dockerd for Drydock's tests on unix:///run/drydock-test/docker.sock,
# with its own data root, exec root and pidfile so it never touches a system
# Docker, and gVisor's runsc registered as the runtime "runsc" (built once,
# see ensure_runsc in scripts/lib.sh). Installs docker.io first when it is
# missing. Idempotent: a daemon that already answers is left alone. Prints
# the DOCKER_HOST to use.
set -eu
. "$(dirname "$0")/../lib.sh"

RUN=/run/drydock-test
SOCK="$RUN/docker.sock"
PIDFILE="$RUN/dockerd.pid"
DATA=/var/lib/drydock-test/docker
LOG="$RUN/dockerd.log"
HOST="unix://$SOCK"

ping_docker() {
	curl -sf --max-time 2 --unix-socket "$SOCK" http://docker/_ping >/dev/null 2>&1
}

# busybox-static makes the tiny image runtime/docker's tests run sandboxes from.
if ! command -v dockerd >/dev/null 2>&1 || ! command -v busybox >/dev/null 2>&1; then
	if [ "$(id -u)" != 0 ]; then
		echo "docker-up: dockerd or busybox missing (run as root to install docker.io busybox-static)" >&2
		exit 1
	fi
	echo "docker-up: installing docker.io busybox-static"
	mkdir -p /run/drydock-test
	# A fresh machine may have no package lists yet.
	if ! { apt-get -o DPkg::Lock::Timeout=900 update -q && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends docker.io busybox-static ; } >/run/drydock-test/apt.log 2>&1; then
		cat /run/drydock-test/apt.log >&2
		exit 1
	fi
fi
if [ "$(id -u)" != 0 ]; then
	echo "docker-up: dockerd needs root" >&2
	exit 1
fi

mkdir -p "$RUN" "$DATA"
if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null && ping_docker; then
	echo "docker-up: dockerd already running (pid $(cat "$PIDFILE"))"
	echo "DRYDOCK_TEST_DOCKER_HOST=$HOST"
	exit 0
fi

# runsc sees the sandbox's bind-mounted unix sockets (toolboxd's, the
# egress proxy's) only with --host-uds (lib.sh's runsc_runtimes, as make
# run, which says why not --oci-seccomp).
# Without runsc (no Go module proxy) the gVisor tests skip, saying so.
if RUNSC=$(ensure_runsc); then
	echo "{$(runsc_runtimes "$RUNSC")}" >"$RUN/daemon.json"
else
	echo "docker-up: gVisor's runsc could not be built; the tests under gVisor will skip" >&2
	echo '{}' >"$RUN/daemon.json"
fi

# A stale pidfile from a killed daemon makes dockerd refuse to start.
rm -f "$PIDFILE" "$SOCK"
nohup dockerd \
	--config-file "$RUN/daemon.json" \
	--host "$HOST" \
	--data-root "$DATA" \
	--exec-root "$RUN/exec" \
	--pidfile "$PIDFILE" \
	>"$LOG" 2>&1 </dev/null &

i=0
until ping_docker; do
	i=$((i + 1))
	if [ "$i" -gt 120 ]; then
		echo "docker-up: dockerd did not answer on $SOCK within 60 s; last log lines:" >&2
		tail -n 20 "$LOG" >&2
		exit 1
	fi
	sleep 0.5
done
echo "docker-up: dockerd started (pid $(cat "$PIDFILE"), log $LOG)"
echo "DRYDOCK_TEST_DOCKER_HOST=$HOST"
