#!/bin/sh
# Stops the PostgreSQL cluster that postgres-up.sh started and removes it (data,
# password, socket directory): every test run starts from an empty cluster.
# Idempotent.
set -eu

RUN=/run/drydock-test
SOCKDIR="$RUN/postgres"
BASE=/var/lib/drydock-test/postgres
PGDATA="$BASE/data"

BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -n | tail -n 1)

if [ -f "$PGDATA/postmaster.pid" ]; then
	pid=$(head -n 1 "$PGDATA/postmaster.pid")
	if kill -0 "$pid" 2>/dev/null; then
		# fast: disconnect clients and shut down cleanly; immediate if that hangs.
		if ! runuser -u postgres -- "$BIN/pg_ctl" -D "$PGDATA" -m fast -w -t 30 stop >/dev/null 2>&1; then
			echo "postgres-down: fast shutdown failed; trying immediate" >&2
			runuser -u postgres -- "$BIN/pg_ctl" -D "$PGDATA" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
		fi
		# pg_ctl returns once the pidfile is gone, a moment before the
		# postmaster has exited.
		i=0
		while kill -0 "$pid" 2>/dev/null; do
			i=$((i + 1))
			if [ "$i" -gt 20 ]; then
				echo "postgres-down: postgres (pid $pid) still running after 10 s; sending SIGKILL" >&2
				kill -KILL "$pid" 2>/dev/null || true
				break
			fi
			sleep 0.5
		done
		echo "postgres-down: postgres (pid $pid) stopped"
	else
		echo "postgres-down: not running (stale pidfile)"
	fi
else
	echo "postgres-down: not running"
fi
rm -rf "$BASE" "$SOCKDIR"
