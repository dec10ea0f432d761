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


. scripts/lib.sh
apt_install "${PACKAGES[@]}"
ensure_npm
