#!/bin/sh
# Stops the dockerd that docker-up.sh started. Its data root stays, so images
# built for tests are reused by the next run. Idempotent.
exec "$(dirname "$0")/stop-daemon.sh" docker /run/drydock-test/dockerd.pid /run/drydock-test/docker.sock
