#!/bin/sh
# Starts Podman's Docker-compatible API for Drydock's tests on
# unix:///run/drydock-test/podman.sock, with its own storage under
# /var/lib/drydock-test/podman. Installs podman and uidmap first when missing.
# This kernel (cgroup v1 hybrid, no CAP_SYS_RESOURCE) makes crun fail, so the
# service runs with runc and explicit ulimits. Idempotent.
set -eu

RUN=/run/drydock-test
SOCK="$RUN/podman.sock"
PIDFILE="$RUN/podman.pid"
CONF="$RUN/containers.conf"
ROOT=/var/lib/drydock-test/podman
LOG="$RUN/podman.log"
HOST="unix://$SOCK"

ping_podman() {
	curl -sf --max-time 2 --unix-socket "$SOCK" http://podman/_ping >/dev/null 2>&1
}

if [ "$(id -u)" != 0 ]; then
	echo "podman-up: needs root" >&2
	exit 1
fi
if ! command -v podman >/dev/null 2>&1 || ! command -v newuidmap >/dev/null 2>&1 || [ ! -x /usr/libexec/podman/catatonit ] || ! command -v busybox >/dev/null 2>&1; then
	echo "podman-up: installing podman uidmap catatonit busybox-static"
	mkdir -p /run/drydock-test
	# A fresh machine may have no package lists yet.
	if ! { apt-get -o DPkg::Lock::Timeout=900 update -q && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -q podman uidmap catatonit busybox-static ; } >/run/drydock-test/apt.log 2>&1; then
		cat /run/drydock-test/apt.log >&2
		exit 1
	fi
fi

mkdir -p "$RUN" "$ROOT"
cat >"$CONF" <<'CONF'
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]

[engine]
runtime = "runc"
CONF

if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null && ping_podman; then
	echo "podman-up: podman service already running (pid $(cat "$PIDFILE"))"
	echo "DRYDOCK_TEST_PODMAN_HOST=$HOST"
	exit 0
fi

rm -f "$PIDFILE" "$SOCK"
CONTAINERS_CONF="$CONF" nohup podman \
	--root "$ROOT/storage" \
	--runroot "$RUN/podman-run" \
	system service --time=0 "$HOST" \
	>"$LOG" 2>&1 </dev/null &
echo $! >"$PIDFILE"

i=0
until ping_podman; do
	i=$((i + 1))
	if [ "$i" -gt 120 ] || ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
		echo "podman-up: podman did not answer on $SOCK; last log lines:" >&2
		tail -n 20 "$LOG" >&2
		exit 1
	fi
	sleep 0.5
done
echo "podman-up: podman service started (pid $(cat "$PIDFILE"), log $LOG)"
echo "DRYDOCK_TEST_PODMAN_HOST=$HOST"
