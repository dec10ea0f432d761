#!/bin/sh
# Starts Podman's Docker-compatible API for Drydock's tests on
# unix:///run/drydock-test/podman.sock, with its own storage under
# /var/lib/drydock-test/podman. Installs podman and uidmap first when missing.
# This kernel (cgroup v1 hybrid, no CAP_SYS_RESOURCE) makes crun fail, so the
# service runs with runc and explicit ulimits. Idempotent.
#
# A second service on unix:///run/drydock-test/podman-gvisor.sock runs every
# container under gVisor's runsc: Podman's Docker-compatible API ignores a
# container's HostConfig.Runtime, so only a service whose default runtime is
# runsc gives Podman sandboxes gVisor. It shares the first one's
# storage (--root, --runroot), so the images built for Podman are there too.
# runsc comes from ensure_runsc (scripts/lib.sh); when it cannot be built the
# plain service still starts and the gVisor one is said to be missing.
set -eu
. "$(dirname "$0")/../lib.sh"

RUN=/run/drydock-test
ROOT=/var/lib/drydock-test/podman

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

RUNSC=
if RUNSC=$(ensure_runsc); then
	:
else
	RUNSC=
	echo "podman-up: gVisor's runsc could not be built: no gVisor Podman service, the tests under it will skip" >&2
fi

# write_conf FILE RUNTIME: a containers.conf whose default runtime is
# RUNTIME. Both services know runsc (when built): they share one container
# database, and a service that meets a container of a runtime it does not
# know cannot inspect or remove it (the reaper tests list every sandbox).
write_conf() {
	cat >"$1" <<CONF
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]

[engine]
runtime = "$2"
CONF
	if [ -n "$RUNSC" ]; then
		printf '\n[engine.runtimes]\nrunsc = ["%s"]\n' "$RUNSC" >>"$1"
	fi
}

# serve NAME CONF [PODMAN-FLAG...]: starts one API service on
# $RUN/NAME.sock (pidfile $RUN/NAME.pid, log $RUN/NAME.log) unless it
# already answers, and prints its DOCKER_HOST.
serve() {
	name=$1 conf=$2
	shift 2
	sock="$RUN/$name.sock" pidfile="$RUN/$name.pid" log="$RUN/$name.log"
	if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && engine_answers "unix://$sock"; then
		echo "podman-up: $name service already running (pid $(cat "$pidfile"))"
		return 0
	fi
	rm -f "$pidfile" "$sock"
	CONTAINERS_CONF="$conf" nohup podman \
		--root "$ROOT/storage" \
		--runroot "$RUN/podman-run" \
		"$@" \
		system service --time=0 "unix://$sock" \
		>"$log" 2>&1 </dev/null &
	echo $! >"$pidfile"
	i=0
	until engine_answers "unix://$sock"; do
		i=$((i + 1))
		if [ "$i" -gt 120 ] || ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
			echo "podman-up: $name did not answer on $sock; last log lines:" >&2
			tail -n 20 "$log" >&2
			return 1
		fi
		sleep 0.5
	done
	echo "podman-up: $name service started (pid $(cat "$pidfile"), log $log)"
}

write_conf "$RUN/containers.conf" runc
serve podman "$RUN/containers.conf"
echo "DRYDOCK_TEST_PODMAN_HOST=unix://$RUN/podman.sock"

if [ -n "$RUNSC" ]; then
	write_conf "$RUN/containers-gvisor.conf" runsc
	# --host-uds=all: the sandbox's toolboxd listens on, and its egress
	# proxy client connects to, unix sockets Drydock bind-mounts from the
	# host; without it gVisor keeps them inside its own kernel.
	# Not --oci-seccomp: see runsc_runtimes in scripts/lib.sh. A global
	# --runtime-flag reaches every container the service creates. --network=none: with
	# runsc's default (sandbox) a container of network "none" has no
	# loopback, and the egress forwarder and the code kernel need one.
	if serve podman-gvisor "$RUN/containers-gvisor.conf" --runtime-flag=host-uds=all --runtime-flag=network=none; then
		echo "DRYDOCK_TEST_PODMAN_GVISOR_HOST=unix://$RUN/podman-gvisor.sock"
	else
		echo "podman-up: the gVisor Podman service did not start: the tests under it will skip" >&2
	fi
fi
