#!/bin/bash
# make run: install what is missing, make sure a container engine answers,
# build the sandbox images (cached), and start the server on 127.0.0.1:8080.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_go

apt_install ca-certificates curl docker.io mmdebstrap uidmap
# The image's Node.js comes from the npm registry that npm names: with no
# registry given, npm is installed to ask it (a fresh Debian's npm names
# its built-in default).
if [ -z "${DRYDOCK_NPM_REGISTRY:-}${NPM_CONFIG_REGISTRY:-}${npm_config_registry:-}" ]; then
	ensure_npm
fi

# Use the engine that answers; start one when none does (a fresh machine
# without systemd, or a stopped service). An engine that answers, or one
# named by DOCKER_HOST, is never touched.
SOCK="${DOCKER_HOST:-unix:///var/run/docker.sock}"
if ! engine_answers "$SOCK"; then
	if [ -n "${DOCKER_HOST:-}" ]; then
		echo "DOCKER_HOST=$DOCKER_HOST does not answer; start that engine, or unset DOCKER_HOST to let make run start one" >&2
		exit 1
	fi
	if command -v systemctl >/dev/null 2>&1 && systemctl start docker 2>/dev/null; then
		log "started the docker service (stop it with: systemctl stop docker)"
		for _ in $(seq 60); do
			engine_answers "$SOCK" && break
			sleep 0.5
		done
	else
		start_dockerd "$SOCK"
	fi
fi
export DOCKER_HOST="$SOCK"
check_gvisor "$SOCK"
if curl -sf --max-time 5 --unix-socket "${SOCK#unix://}" http://docker/info 2>/dev/null | grep -q '"LiveRestoreEnabled":false'; then
	log "this engine runs without live-restore: restarting it ends running jobs. Add {\"live-restore\": true} to /etc/docker/daemon.json and reload it (systemctl reload docker)"
fi

log "building the sandbox images (first time: several minutes; then cached)"
./bin/drydock image build --profile headless
./bin/drydock image build --profile desktop

# Sandbox network: the package registries this machine's npm and pip use
# become the egress default, and the CAs it added to its trust store are
# trusted in sandboxes (see scripts/sandboxnet.sh; DRYDOCK_EGRESS_DEFAULT or
# DRYDOCK_SANDBOX_CA, even empty, choose instead).
mapfile -t sandbox_net < <(scripts/sandboxnet.sh)

log "starting drydock server on http://127.0.0.1:8080 (Ctrl-C stops it)"
if ! our_dockerd >/dev/null; then
	exec ./bin/drydock server --listen 127.0.0.1:8080 --runtime docker ${sandbox_net[@]+"${sandbox_net[@]}"} "$@"
fi
# Ctrl-C reaches the server, which shuts down; the reminder follows it.
trap : INT TERM
rc=0
./bin/drydock server --listen 127.0.0.1:8080 --runtime docker ${sandbox_net[@]+"${sandbox_net[@]}"} "$@" || rc=$?
log "the dockerd make run started (pid $(our_dockerd || echo '?')) still runs, with its sandboxes; stop it with: make stop"
exit "$rc"
