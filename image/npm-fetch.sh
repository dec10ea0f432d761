#!/bin/sh
# Fetches the npm packages of packages/npm.txt for this machine's
# architecture into DIR under the names setup.sh reads (node.tgz, npm.tgz,
# typescript.tgz, types-node.tgz...), and refuses any whose sha512 is not the pinned integrity.
# The Dockerfile runs it; `drydock image build` does the same in Go.
set -eu
LIST=${1:?usage: npm-fetch.sh LIST REGISTRY DIR}
REGISTRY=${2:-}
DIR=${3:?usage: npm-fetch.sh LIST REGISTRY DIR}
if [ -z "$REGISTRY" ]; then
	echo "npm-fetch.sh: no npm registry: pass --build-arg NPM_REGISTRY=\$(npm config get registry)" >&2
	exit 1
fi
REGISTRY=${REGISTRY%/}
ARCH=$(dpkg --print-architecture)
mkdir -p "$DIR"
grep -v '^#' "$LIST" | while read -r name version integrity arch; do
	[ -n "$name" ] || continue
	if [ -n "$arch" ] && [ "$arch" != "$ARCH" ]; then
		continue
	fi
	case "$name" in
	node-linux-*) role=node ;;
	*) role=$(printf '%s' "$name" | sed 's#^@##; s#/#-#g') ;;
	esac
	curl -fsSL --retry 3 -o "$DIR/$role.tgz" "$REGISTRY/$name/-/${name##*/}-$version.tgz"
	got="sha512-$(openssl dgst -sha512 -binary "$DIR/$role.tgz" | base64 -w0)"
	if [ "$got" != "$integrity" ]; then
		echo "npm-fetch.sh: $name@$version has integrity $got, want $integrity" >&2
		exit 1
	fi
done
test -s "$DIR/node.tgz" || { echo "npm-fetch.sh: no Node.js for $ARCH in $LIST" >&2; exit 1; }
