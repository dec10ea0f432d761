#!/bin/sh
# stop-daemon.sh NAME PIDFILE SOCKET: stops a daemon a *-up.sh script started,
# by its pid: SIGTERM, then SIGKILL after 30 s. Removes the pidfile and the
# socket. Idempotent. The daemon's storage stays, so images are reused.
set -eu
name=$1 pidfile=$2 sock=$3

if [ ! -f "$pidfile" ]; then
	echo "$name-down: not running"
	exit 0
fi
pid=$(cat "$pidfile")
if ! kill -0 "$pid" 2>/dev/null; then
	rm -f "$pidfile" "$sock"
	echo "$name-down: not running (removed stale pidfile)"
	exit 0
fi
kill -TERM "$pid"
i=0
while kill -0 "$pid" 2>/dev/null; do
	i=$((i + 1))
	if [ "$i" -gt 60 ]; then
		echo "$name-down: $name (pid $pid) still running after 30 s; sending SIGKILL" >&2
		kill -KILL "$pid" 2>/dev/null || true
		break
	fi
	sleep 0.5
done
rm -f "$pidfile" "$sock"
echo "$name-down: $name (pid $pid) stopped"
