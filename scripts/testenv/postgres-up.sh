#!/bin/sh
# Starts a throwaway PostgreSQL cluster for Drydock's tests: data in
# /var/lib/drydock-test/postgres, listening on 127.0.0.1 only (port 55432, or
# the next free one) and on a unix socket under /run/drydock-test/postgres.
# Installs Debian's postgresql first when it is missing. The cluster runs as
# the postgres user, since initdb and postgres refuse root. Idempotent: a
# cluster that already answers is left alone. Prints the DSN to use, whose
# role may create databases (the tests make one per test).
#
# TCP connections need the password, a random one kept root-only next to the
# cluster, so other local users cannot reach the test database; the socket
# directory is private to the postgres user (and root).
set -eu

RUN=/run/drydock-test
SOCKDIR="$RUN/postgres"
LOG="$SOCKDIR/postgres.log"
BASE=/var/lib/drydock-test/postgres
PGDATA="$BASE/data"
PWFILE="$BASE/password"
ROLE=drydock
DB=drydock
FIRST_PORT=55432

if [ "$(id -u)" != 0 ]; then
	echo "postgres-up: needs root (installs postgresql, runs the cluster as the postgres user)" >&2
	exit 1
fi

# Debian's binaries live in /usr/lib/postgresql/<major>/bin; only psql and the
# wrappers are on PATH. Take the newest installed major.
pgbin() {
	ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -n | tail -n 1
}
BIN=$(pgbin)
if [ -z "$BIN" ] || [ ! -x "$BIN/initdb" ] || ! id postgres >/dev/null 2>&1; then
	echo "postgres-up: installing postgresql"
	mkdir -p "$RUN"
	# A fresh machine may have no package lists yet.
	if ! { apt-get -o DPkg::Lock::Timeout=900 update -q && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -q postgresql ; } >"$RUN/apt.log" 2>&1; then
		cat "$RUN/apt.log" >&2
		exit 1
	fi
	BIN=$(pgbin)
fi

as_pg() { runuser -u postgres -- "$@"; }

mkdir -p "$RUN" "$BASE" "$SOCKDIR"
chown postgres:postgres "$SOCKDIR"
chmod 0700 "$SOCKDIR"

running_port() {
	# Line 4 of postmaster.pid is the port of a running postmaster.
	if [ -f "$PGDATA/postmaster.pid" ] && as_pg "$BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; then
		sed -n 4p "$PGDATA/postmaster.pid"
	fi
}

print_dsn() {
	echo "DRYDOCK_TEST_POSTGRES_DSN=postgres://$ROLE:$(cat "$PWFILE")@127.0.0.1:$1/$DB?sslmode=disable"
}

port=$(running_port)
if [ -n "$port" ] && [ -s "$PWFILE" ] && pg_isready -q -h 127.0.0.1 -p "$port" -t 2; then
	echo "postgres-up: postgres already running (pid $(head -n 1 "$PGDATA/postmaster.pid"), port $port)"
	print_dsn "$port"
	exit 0
fi

if [ ! -s "$PWFILE" ]; then
	(umask 077 && od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >"$PWFILE")
fi

if [ ! -f "$PGDATA/PG_VERSION" ]; then
	# A half-made cluster (interrupted initdb) is useless: start over.
	rm -rf "$PGDATA"
	mkdir -p "$PGDATA"
	chown postgres:postgres "$PGDATA"
	chmod 0700 "$PGDATA"
	pw=$(mktemp)
	cp "$PWFILE" "$pw"
	chown postgres "$pw"
	if ! as_pg "$BIN/initdb" -D "$PGDATA" -U "$ROLE" --pwfile="$pw" -E UTF8 --locale=C.UTF-8 \
		--auth-local=trust --auth-host=scram-sha-256 >"$BASE/initdb.log" 2>&1; then
		rm -f "$pw"
		cat "$BASE/initdb.log" >&2
		exit 1
	fi
	rm -f "$pw"
	# Enough connections for parallel tests that each open a pool (up to 16
	# connections, more on big machines), several in the replica tests.
	cat >>"$PGDATA/postgresql.conf" <<CONF

# drydock test cluster
listen_addresses = '127.0.0.1'
unix_socket_directories = '$SOCKDIR'
max_connections = 1000
CONF
fi

state="already running"
if [ -z "$port" ]; then
	state=started
	port=$FIRST_PORT
	# ss (iproute2) is on every Debian install; without it, try 55432 anyway.
	while command -v ss >/dev/null 2>&1 && [ -n "$(ss -Hltn "( sport = :$port )")" ]; do
		port=$((port + 1))
		if [ "$port" -gt $((FIRST_PORT + 100)) ]; then
			echo "postgres-up: no free port in $FIRST_PORT-$port" >&2
			exit 1
		fi
	done
	if ! as_pg "$BIN/pg_ctl" -D "$PGDATA" -l "$LOG" -w -t 60 -o "-p $port" start >/dev/null; then
		echo "postgres-up: postgres did not start; last log lines:" >&2
		tail -n 20 "$LOG" >&2
		exit 1
	fi
fi

# A cluster whose password file was lost gets the new password (the socket
# trusts the local postgres user).
psql_sock() { as_pg psql -X -q -v ON_ERROR_STOP=1 -h "$SOCKDIR" -p "$port" -U "$ROLE" "$@"; }
if ! PGPASSWORD=$(cat "$PWFILE") psql -X -q -h 127.0.0.1 -p "$port" -U "$ROLE" -d postgres -c 'SELECT 1' >/dev/null 2>&1; then
	psql_sock -d postgres -c "ALTER ROLE $ROLE PASSWORD '$(cat "$PWFILE")'" >/dev/null
fi
if [ -z "$(psql_sock -d postgres -tA -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" ]; then
	psql_sock -d postgres -c "CREATE DATABASE $DB" >/dev/null
fi

echo "postgres-up: postgres $state (pid $(head -n 1 "$PGDATA/postmaster.pid"), port $port, log $LOG)"
print_dsn "$port"
