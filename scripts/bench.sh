#!/bin/bash
# make bench: measure this machine with `drydock bench all` on Docker and
# Podman and write bin/bench.json (every figure) and bin/bench.md (the
# tables for docs/BENCHMARKS.md).
#
# Engines: DRYDOCK_TEST_DOCKER_HOST / DRYDOCK_TEST_PODMAN_HOST when set;
# otherwise the private daemons of scripts/testenv, reused when they already
# answer, started (and stopped again at the end) when they do not. Extra
# flags for drydock bench all go in BENCH_ARGS (e.g. BENCH_ARGS="-n 5").
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_go

OUT_JSON=${BENCH_JSON:-bin/bench.json}
OUT_MD=${BENCH_MD:-bin/bench.md}
started=()

cleanup() {
	set +e
	# Stop only what this script started, newest first.
	for ((i = ${#started[@]} - 1; i >= 0; i--)); do
		"scripts/testenv/${started[$i]}-down.sh" >/dev/null 2>&1
	done
}
trap cleanup EXIT

# engine NAME VAR: sets VAR to the engine's socket, starting the private
# daemon only when VAR is unset and the daemon does not answer yet.
engine() {
	local name=$1 var=$2 sock=/run/drydock-test/$1.sock
	if [ -n "${!var:-}" ]; then
		log "$name: using ${!var}"
		return 0
	fi
	if curl -sf --max-time 2 --unix-socket "$sock" "http://$name/_ping" >/dev/null 2>&1; then
		log "$name: reusing the running daemon on $sock"
	else
		log "$name: starting the private daemon"
		if ! scripts/testenv/$name-up.sh >&2; then
			log "$name: could not start; measuring without it"
			return 0
		fi
		started+=("$name")
	fi
	printf -v "$var" 'unix://%s' "$sock"
}
engine docker DRYDOCK_TEST_DOCKER_HOST
engine podman DRYDOCK_TEST_PODMAN_HOST

hosts=()
for h in "${DRYDOCK_TEST_DOCKER_HOST:-}" "${DRYDOCK_TEST_PODMAN_HOST:-}"; do
	[ -n "$h" ] && hosts+=(--docker-host "$h")
done
if [ ${#hosts[@]} -eq 0 ]; then
	echo "no container engine: set DRYDOCK_TEST_DOCKER_HOST or run as root so scripts/testenv can start one" >&2
	exit 1
fi

[ -x bin/drydock ] || make -s build
log "sandbox images (cached by input hash; a first build takes several minutes)"
for ((i = 1; i < ${#hosts[@]}; i += 2)); do
	for p in headless desktop; do
		./bin/drydock image build --profile "$p" --docker-host "${hosts[$i]}" >&2
	done
done

log "drydock bench all ${hosts[*]} ${BENCH_ARGS:-}"
# shellcheck disable=SC2086 # BENCH_ARGS is a list of flags
./bin/drydock bench all "${hosts[@]}" --json "$OUT_JSON" ${BENCH_ARGS:-} | tee "$OUT_MD"
log "results: $OUT_JSON and $OUT_MD"
