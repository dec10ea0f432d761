#!/bin/sh
# Finishes a sandbox root filesystem whose packages are installed: installs
# Node.js, npm, TypeScript and Node's types from the verified npm tarballs in
# $2 (node.tgz, npm.tgz, typescript.tgz, types-node.tgz, undici-types.tgz; see
# packages/npm.txt), adds the agent user (uid
# 1000) and /workspace, configures the browser, and drops what only takes
# space (apt lists and caches, docs, man pages, logs). Run as root with the
# root of the filesystem as $1: mmdebstrap's customize hook passes its chroot
# directory, the Dockerfile passes /.
set -eu
ROOT=${1:?usage: setup.sh ROOTFS NPMDIR}
NPMDIR=${2:?usage: setup.sh ROOTFS NPMDIR}

# npm tarballs hold package/...; owners are the build's, not the tarball's.
unpack() {
	mkdir -p "$2"
	tar -xzf "$1" -C "$2" --strip-components=1 --no-same-owner
}
mkdir -p "$ROOT/usr/local/bin" "$ROOT/usr/local/lib/node_modules"
tmp=$(mktemp -d)
unpack "$NPMDIR/node.tgz" "$tmp"
install -m 0755 "$tmp/bin/node" "$ROOT/usr/local/bin/node"
# node-gyp builds native addons against these headers (--nodedir=/usr/local),
# since it cannot download them without a network.
rm -rf "$ROOT/usr/local/include/node"
mkdir -p "$ROOT/usr/local/include"
cp -R "$tmp/include/node" "$ROOT/usr/local/include/node"
rm -rf "$tmp"
# @types/node comes as types-node.tgz (see image/npm.go's role).
for pkg in npm typescript @types/node undici-types; do
	file=$(printf '%s' "$pkg" | sed 's#^@##; s#/#-#g')
	rm -rf "$ROOT/usr/local/lib/node_modules/$pkg"
	unpack "$NPMDIR/$file.tgz" "$ROOT/usr/local/lib/node_modules/$pkg"
done
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$ROOT/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$ROOT/usr/local/bin/npx"
ln -sf ../lib/node_modules/typescript/bin/tsc "$ROOT/usr/local/bin/tsc"
ln -sf ../lib/node_modules/typescript/bin/tsserver "$ROOT/usr/local/bin/tsserver"
chmod -R a+rX,go-w "$ROOT/usr/local/lib/node_modules" "$ROOT/usr/local/include/node"

# Chromium as the agent: its own sandbox needs user namespaces, which the
# engine's seccomp profile and the missing capabilities refuse, so the
# container is the sandbox; /dev/shm is the engine's small default, and
# there is no GPU and no keyring. Debian's wrapper reads /etc/chromium.d.
if [ -d "$ROOT/etc/chromium.d" ]; then
	cat >"$ROOT/etc/chromium.d/drydock" <<'FLAGS'
# Drydock sandbox: see image/setup.sh.
export CHROMIUM_FLAGS="$CHROMIUM_FLAGS --no-sandbox --disable-dev-shm-usage --disable-gpu --no-first-run --no-default-browser-check --password-store=basic"
FLAGS
fi

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
