#!/bin/bash
# Installs, on this host, the in-sandbox tools that the desktop and kernel
# packages drive, so that their tests run instead of skipping: the display
# stack (Xvfb, fluxbox, x11vnc, xdotool; xmessage, xev and xwd for the
# tests), the Jupyter kernel and server, matplotlib (image output test),
# node and TypeScript, and npm for the SDK and MCP TypeScript tests. With
# --list it only prints the package names (npm aside: see ensure_npm).
set -euo pipefail
cd "$(dirname "$0")/../.."

PACKAGES=(
	xvfb
	fluxbox
	x11vnc
	xdotool
	x11-utils
	x11-apps
	imagemagick
	python3-ipykernel
	python3-jupyter-client
	python3-jupyter-server
	python3-nbclassic
	python3-matplotlib
	nodejs
	node-typescript
)

if [ "${1:-}" = "--list" ]; then
	printf '%s\n' "${PACKAGES[@]}"
	exit 0
fi

# ensure_npm: Debian's nodejs (18) comes without npm, which is the separate
# package npm; NodeSource's nodejs bundles its own npm and conflicts with
# Debian's. So Debian's npm is installed only when npm is still missing
# after nodejs, and never beside a nodejs that is not Debian's.
ensure_npm() {
	command -v npm >/dev/null 2>&1 && return 0
	v=$(dpkg-query -W -f='${Version}' nodejs 2>/dev/null || true)
	case "$v" in
	*nodesource*)
		# Warned, not fatal: the tests that need npm skip without it.
		echo "warning: NodeSource's nodejs $v is installed without its npm: reinstall it (apt-get install --reinstall nodejs); Debian's npm conflicts with it" >&2
		return 0
		;;
	esac
	apt_install npm
}

. scripts/lib.sh
apt_install "${PACKAGES[@]}"
ensure_npm
