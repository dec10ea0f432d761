#!/bin/sh
# Stops the Podman API services that podman-up.sh started (the gVisor one
# first: it shares the plain one's storage). Their storage stays, so images
# built for tests are reused. Idempotent.
set -eu
dir=$(dirname "$0")
"$dir/stop-daemon.sh" podman-gvisor /run/drydock-test/podman-gvisor.pid /run/drydock-test/podman-gvisor.sock
exec "$dir/stop-daemon.sh" podman /run/drydock-test/podman.pid /run/drydock-test/podman.sock
