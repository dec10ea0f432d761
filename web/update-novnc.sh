#!/usr/bin/env bash
# Replace the vendored noVNC library with a release of the npm package
# @novnc/novnc (ES modules: version 1.5 and later ship core/ as such).
#   web/update-novnc.sh 1.7.0
set -euo pipefail
version=${1:?usage: $0 VERSION}
here=$(cd "$(dirname "$0")" && pwd)
dest=$here/static/novnc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@novnc/novnc@$version" >/dev/null && tar xzf novnc-novnc-"$version".tgz)
pkg=$tmp/package
test -f "$pkg/core/rfb.js" || { echo "@novnc/novnc@$version has no core/rfb.js (not an ES-module release)" >&2; exit 1; }
rm -rf "$dest/core" "$dest/vendor" "$dest/docs"
mkdir -p "$dest/docs"
cp -r "$pkg/core" "$pkg/vendor" "$dest/"
cp "$pkg/LICENSE.txt" "$pkg/AUTHORS" "$dest/"
cp "$pkg"/docs/LICENSE.* "$dest/docs/"
shasum=$(cd "$tmp" && sha1sum novnc-novnc-"$version".tgz | cut -d' ' -f1)
sed -i -E "s/version [0-9][^ ]* \(tarball sha1 [0-9a-f]+,/version $version (tarball sha1 $shasum,/" "$dest/SOURCE.md"
echo "noVNC $version vendored in $dest; update the integrity line of SOURCE.md from 'npm view @novnc/novnc@$version dist.integrity'"
