# Shared helpers for scripts/*.sh. Source it; do not run it.

log() { printf '==> %s\n' "$*" >&2; }

# apt_install PKG...: installs the Debian packages that are missing, quietly.
apt_install() {
	missing=""
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "missing Debian packages:$missing (run as root, or install them with apt-get)" >&2
		return 1
	fi
	log "installing:$missing"
	if [ ! -f /var/lib/apt/lists/.drydock-updated ] || [ -n "$(find /var/lib/apt/lists/.drydock-updated -mmin +1440 2>/dev/null)" ]; then
		apt-get -o DPkg::Lock::Timeout=900 update -qq && touch /var/lib/apt/lists/.drydock-updated
	fi
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends $missing >/dev/null
}

# ensure_go: Go 1.26 at /usr/local/go (the machine image provides it).
ensure_go() {
	if ! command -v go >/dev/null 2>&1; then
		if [ -x /usr/local/go/bin/go ]; then
			export PATH="/usr/local/go/bin:$PATH"
		else
			echo "Go is not installed: install Go 1.26 to /usr/local/go (https://go.dev/doc/install)" >&2
			return 1
		fi
	fi
}
