#!/bin/sh
# Installs the in-sandbox tools that the desktop and kernel packages drive, so
# their tests run on a Debian 12 host instead of skipping. With --list it only
# prints the package names (one a line) for other scripts to reuse.
set -eu

PACKAGES="
xvfb
x11vnc
xdotool
fluxbox
imagemagick
x11-utils
x11-apps
python3-ipykernel
python3-jupyter-client
python3-jupyter-server
python3-matplotlib
nodejs
node-typescript
"

if [ "${1:-}" = "--list" ]; then
	for p in $PACKAGES; do echo "$p"; done
	exit 0
fi

missing=""
for p in $PACKAGES; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
if [ -z "$missing" ]; then
	echo "sandbox tools: all installed"
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	echo "sandbox tools missing:$missing (run as root to install)" >&2
	exit 1
fi
echo "sandbox tools: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086 # word splitting of the package list is intended
apt-get -o DPkg::Lock::Timeout=900 install -y --no-install-recommends $missing
