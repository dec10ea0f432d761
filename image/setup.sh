#!/bin/sh
# Finishes a sandbox root filesystem whose packages are installed: adds the
# agent user (uid 1000) and /workspace, and drops what only takes space (apt
# lists and caches, docs, man pages, logs). Run as root with the root of the
# filesystem as $1: mmdebstrap's customize hook passes its chroot directory,
# the Dockerfile passes /.
set -eu
ROOT=${1:?usage: setup.sh ROOTFS}

if ! grep -q '^agent:' "$ROOT/etc/passwd"; then
	useradd --root "$ROOT" --uid 1000 --user-group --create-home --home-dir /home/agent --shell /bin/bash agent
fi
mkdir -p "$ROOT/workspace" "$ROOT/run/toolbox"
chown 1000:1000 "$ROOT/workspace" "$ROOT/run/toolbox"
chmod 0755 "$ROOT/workspace"

# The sandbox runs with a read-only root filesystem; these are the mount
# points the runtime puts writable, size-limited filesystems on.
chmod 1777 "$ROOT/tmp"

rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/cache/apt/* "$ROOT"/var/cache/debconf/*-old \
	"$ROOT"/var/log/*.log "$ROOT"/var/log/apt/* "$ROOT"/usr/share/man/* "$ROOT"/usr/share/info/*
find "$ROOT/usr/share/doc" -mindepth 1 ! -name copyright ! -type d -delete 2>/dev/null || true
find "$ROOT/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
