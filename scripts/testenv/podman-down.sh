#!/bin/sh
# Stops the Podman API service that podman-up.sh started, by its pid. Its
# storage stays, so images built for tests are reused. Idempotent.
set -eu

RUN=/run/drydock-test
PIDFILE="$RUN/podman.pid"

if [ ! -f "$PIDFILE" ]; then
	echo "podman-down: not running"
	exit 0
fi
pid=$(cat "$PIDFILE")
if ! kill -0 "$pid" 2>/dev/null; then
	rm -f "$PIDFILE" "$RUN/podman.sock"
	echo "podman-down: not running (removed stale pidfile)"
	exit 0
fi
kill -TERM "$pid"
i=0
while kill -0 "$pid" 2>/dev/null; do
	i=$((i + 1))
	if [ "$i" -gt 60 ]; then
		echo "podman-down: podman (pid $pid) still running after 30 s; sending SIGKILL" >&2
		kill -KILL "$pid" 2>/dev/null || true
		break
	fi
	sleep 0.5
done
rm -f "$PIDFILE" "$RUN/podman.sock"
echo "podman-down: podman service (pid $pid) stopped"
