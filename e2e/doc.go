// Package e2e holds end-to-end tests that drive the real drydock binary over
// its real HTTP API: lifecycle, kill -9 durability, recovery, cancel, timeout,
// auth and the CLI. They use the local runtime unless a Docker engine is
// given (DRYDOCK_TEST_DOCKER_HOST), in which case they also run with real
// sandboxes.
package e2e
