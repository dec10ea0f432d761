#!/bin/bash
# make run: install what is missing, make sure a container engine answers,
# build the sandbox images (cached), and start the server on 127.0.0.1:8080.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_go

apt_install ca-certificates curl docker.io mmdebstrap uidmap

# Use the engine that answers; start a dockerd of our own when none does
# (a fresh machine without systemd, or a stopped service).
SOCK="${DOCKER_HOST:-unix:///var/run/docker.sock}"
if ! curl -sf --max-time 2 --unix-socket "${SOCK#unix://}" http://docker/_ping >/dev/null 2>&1; then
	if command -v systemctl >/dev/null 2>&1 && systemctl start docker 2>/dev/null; then
		log "started the docker service"
	else
		log "starting dockerd (log: /var/log/drydock-dockerd.log)"
		nohup dockerd >/var/log/drydock-dockerd.log 2>&1 </dev/null &
	fi
	for _ in $(seq 60); do
		curl -sf --max-time 2 --unix-socket "${SOCK#unix://}" http://docker/_ping >/dev/null 2>&1 && break
		sleep 0.5
	done
fi
export DOCKER_HOST="$SOCK"

log "building the sandbox images (first time: several minutes; then cached)"
./bin/drydock image build --profile headless
./bin/drydock image build --profile desktop

# Sandbox network: the package registries this machine's npm and pip use
# become the egress default, and the CAs it added to its trust store are
# trusted in sandboxes (see scripts/sandboxnet.sh; DRYDOCK_EGRESS_DEFAULT or
# DRYDOCK_SANDBOX_CA, even empty, choose instead).
mapfile -t sandbox_net < <(scripts/sandboxnet.sh)

log "starting drydock server on http://127.0.0.1:8080 (Ctrl-C stops it)"
exec ./bin/drydock server --listen 127.0.0.1:8080 --runtime docker ${sandbox_net[@]+"${sandbox_net[@]}"} "$@"
