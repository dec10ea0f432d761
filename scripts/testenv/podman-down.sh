#!/bin/sh
# Stops the Podman API service that podman-up.sh started. Its storage stays, so
# images built for tests are reused. Idempotent.
exec "$(dirname "$0")/stop-daemon.sh" podman /run/drydock-test/podman.pid /run/drydock-test/podman.sock
