#!/bin/bash
# make test: install the test dependencies, start private daemons (dockerd,
# Podman's API service), build the binaries and sandbox images, run every
# test with those daemons, and stop the daemons again, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_go
START=$(date +%s)

# gVisor's runsc is built from source once per version (about 3 minutes on
# a new machine): beside the package installs, which mostly wait for the
# network, rather than inside docker-up.sh after them. docker-up.sh then
# finds it in the cache.
runsc_log=$(mktemp)
(ensure_runsc >/dev/null) 2>"$runsc_log" &
runsc_pid=$!

apt_install ca-certificates curl git docker.io podman uidmap mmdebstrap chromium
apt_install python3-httpx mypy # the Python SDK's one dependency, and its type checker (sdk/python)
if [ -x scripts/testenv/sandbox-tools.sh ]; then
	# Tools the in-sandbox packages' own tests use on the host (Xvfb, x11vnc,
	# xdotool, Jupyter kernel, node, tsc).
	scripts/testenv/sandbox-tools.sh
fi

cleanup() {
	set +e
	if [ -n "${runsc_pid:-}" ]; then
		kill "$runsc_pid" 2>/dev/null
		wait "$runsc_pid" 2>/dev/null
	fi
	if [ -n "${shim_pid:-}" ]; then
		kill "$shim_pid" 2>/dev/null
		wait "$shim_pid" 2>/dev/null
	fi
	if [ -n "${kube_pid:-}" ]; then
		kill "$kube_pid" 2>/dev/null
		wait "$kube_pid" 2>/dev/null
	fi
	scripts/testenv/kube-down.sh >/dev/null 2>&1
	scripts/testenv/postgres-down.sh >/dev/null 2>&1
	scripts/testenv/podman-down.sh >/dev/null 2>&1
	scripts/testenv/docker-down.sh >/dev/null 2>&1
}
trap cleanup EXIT

# up runs a testenv script and takes the DRYDOCK_TEST_ lines it prints;
# a script that fails stops the run (eval "$(...)" alone would hide it and
# let the tests that need the daemon skip).
up() {
	local out
	out=$("scripts/testenv/$1-up.sh") || { echo "$out" >&2; echo "scripts/testenv/$1-up.sh failed" >&2; exit 1; }
	eval "$(echo "$out" | grep '^DRYDOCK_TEST_')"
}

if ! wait "$runsc_pid"; then
	cat "$runsc_log" >&2 # docker-up.sh tries again and says what it means
fi
runsc_pid=
rm -f "$runsc_log"
log "starting private dockerd, Podman API service and PostgreSQL"
up docker
up podman
up postgres
: "${DRYDOCK_TEST_DOCKER_HOST:?} ${DRYDOCK_TEST_PODMAN_HOST:?} ${DRYDOCK_TEST_POSTGRES_DSN:?}"
export DRYDOCK_TEST_DOCKER_HOST DRYDOCK_TEST_PODMAN_HOST DRYDOCK_TEST_POSTGRES_DSN
# Podman's service under gVisor; absent (and its tests skip) when runsc
# could not be built.
export DRYDOCK_TEST_PODMAN_GVISOR_HOST="${DRYDOCK_TEST_PODMAN_GVISOR_HOST:-}"

# The control plane starts in the background: on a new machine its binaries
# are built from source first (about 15 minutes on 2 cores), which the image
# builds below, mostly downloads and unpacking, can overlap.
log "starting a Kubernetes control plane in the background (built from source once per version)"
kube_log=$(mktemp)
scripts/testenv/kube-up.sh >"$kube_log" 2>&1 &
kube_pid=$!

# gVisor's containerd shim for the node's RuntimeClass, from the module
# runsc (built by docker-up.sh) comes from: about 2 minutes on a new
# machine, overlapped with the image builds like the control plane.
shim_log=$(mktemp)
(ensure_runsc_shim >/dev/null) 2>"$shim_log" &
shim_pid=$!

log "lint"
test -z "$(gofmt -l .)" || { gofmt -l .; echo "gofmt needed" >&2; exit 1; }
go vet ./...

log "build"
make -s build

log "sandbox images (cached by input hash; a first build takes several minutes)"
# The two rootfs builds are mostly downloads and unpacking: run them side by
# side on Docker, then Podman imports the cached rootfs tarballs.
./bin/drydock image build --profile headless --docker-host "$DRYDOCK_TEST_DOCKER_HOST" &
headless=$!
./bin/drydock image build --profile desktop --docker-host "$DRYDOCK_TEST_DOCKER_HOST"
wait "$headless"
./bin/drydock image build --profile headless --docker-host "$DRYDOCK_TEST_PODMAN_HOST"
./bin/drydock image build --profile desktop --docker-host "$DRYDOCK_TEST_PODMAN_HOST"
log "waiting for the Kubernetes control plane"
wait "$kube_pid" || { cat "$kube_log" >&2; echo "scripts/testenv/kube-up.sh failed" >&2; exit 1; }
kube_pid=
eval "$(grep '^DRYDOCK_TEST_' "$kube_log")"
rm -f "$kube_log"
: "${DRYDOCK_TEST_KUBECONFIG:?} ${DRYDOCK_TEST_KUBECONFIG_RUNTIME:?}"
export DRYDOCK_TEST_KUBECONFIG DRYDOCK_TEST_KUBECONFIG_RUNTIME
if ! wait "$shim_pid"; then
	cat "$shim_log" >&2
	log "gVisor's containerd shim did not build: the node gets no gVisor RuntimeClass, and its tests skip"
fi
shim_pid=
rm -f "$shim_log"
log "a real Kubernetes node (containerd, kubelet) running the sandbox images (copied once per image: about 1.5 minutes)"
DRYDOCK_KUBE_NODE=1 up kube
: "${DRYDOCK_TEST_KUBE_NODE:?}"
# The node's gVisor RuntimeClass; absent (and its tests skip) when runsc
# or its shim could not be built.
export DRYDOCK_TEST_KUBE_NODE DRYDOCK_TEST_KUBE_RUNTIME_CLASS="${DRYDOCK_TEST_KUBE_RUNTIME_CLASS:-}"
# gVisor is the default isolation, so every check that needs it runs, not
# skips. A machine that cannot build runsc (no Go module proxy) says so here
# rather than passing with the gVisor tests skipped;
# DRYDOCK_TEST_ALLOW_NO_GVISOR=1 lets it go on.
if [ "${DRYDOCK_TEST_ALLOW_NO_GVISOR:-}" != 1 ]; then
	missing=""
	docker -H "$DRYDOCK_TEST_DOCKER_HOST" info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"' || missing="$missing Docker's runsc runtime,"
	[ -n "$DRYDOCK_TEST_PODMAN_GVISOR_HOST" ] || missing="$missing the Podman gVisor service,"
	[ -n "$DRYDOCK_TEST_KUBE_RUNTIME_CLASS" ] || missing="$missing the Kubernetes node's gVisor RuntimeClass,"
	if [ -n "$missing" ]; then
		echo "make test: gVisor is missing (${missing%,}): its tests would skip; see the logs above, or set DRYDOCK_TEST_ALLOW_NO_GVISOR=1" >&2
		exit 1
	fi
fi
export DRYDOCK_TEST_IMAGE=drydock-sandbox:headless
export DRYDOCK_TEST_IMAGE_HEADLESS=drydock-sandbox:headless
export DRYDOCK_TEST_IMAGE_DESKTOP=drydock-sandbox:desktop
export DRYDOCK_TEST_BIN="$PWD/bin/drydock"
export DRYDOCK_TEST_TOOLBOXD="$PWD/bin/toolboxd"
export DRYDOCK_TEST_E2E=1
# The fault tests (kill -9 under load, a private dockerd restarted, full disk)
# need root and an engine, which this script provides.
export DRYDOCK_TEST_FAULTS=1

log "go test (every package; daemons available)"
# Compile every test binary first, in parallel (-p 1 below would also build
# one package at a time), running no test.
go test -count=1 -run '^$' ./... >/dev/null
# Then one package at a time: the end-to-end tests start many servers,
# sandboxes and browsers, and on a small machine other packages' load at the
# same time starves them.
go test -p 1 -count=1 -timeout 25m ./...

log "fuzz targets, bounded"
FUZZTIME=10s scripts/fuzz.sh

log "all tests passed in $(( $(date +%s) - START ))s"
