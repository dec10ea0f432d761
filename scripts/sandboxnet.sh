#!/bin/bash
# scripts/sandboxnet.sh: the server flags that let sandboxes reach what the
# user's own tools reach, one argument a line (make run passes them on):
#   --egress-default: the hosts of the package registries this machine's npm
#     and pip are configured with, read from the tools themselves (npm config
#     get registry; pip config list, or pip's built-in index when none is
#     set), so no registry's name is written here;
#   --egress-private: the addresses of those hosts that are not public (a
#     mirror on the LAN, or a network that routes them privately), each
#     alone (/32, /128), since the proxy refuses non-public addresses
#     otherwise;
#   --sandbox-ca: the CAs this machine added to its own trust store
#     (Debian: /usr/local/share/ca-certificates/*.crt), e.g. the CA of a
#     network that inspects TLS.
# DRYDOCK_EGRESS_DEFAULT or DRYDOCK_SANDBOX_CA in the environment, even
# empty, replace what this script would find (the server reads them).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# host_port URL: host:port of a registry URL (default ports by scheme).
host_port() {
	python3 - "$1" <<'PY'
import sys, urllib.parse as u
x = u.urlsplit(sys.argv[1].strip().strip("'\""))
if x.hostname and x.scheme in ("http", "https"):
    print(f"{x.hostname}:{x.port or (443 if x.scheme == 'https' else 80)}")
PY
}

registries() {
	if command -v npm >/dev/null 2>&1; then
		npm config get registry 2>/dev/null || true
	fi
	local pip=""
	for p in pip3 pip; do command -v "$p" >/dev/null 2>&1 && { pip=$p; break; }; done
	[ -n "$pip" ] || return 0
	# index-url and extra-index-url from every scope pip reads; the value
	# is quoted and may list several URLs.
	local configured
	configured=$("$pip" config list 2>/dev/null | sed -n "s/^[^=]*\.\(extra-\)\{0,1\}index-url=//p" | tr -d "'\"" | tr ' ' '\n')
	configured+=$'\n'"${PIP_INDEX_URL:-}"$'\n'"${PIP_EXTRA_INDEX_URL:-}"
	if [ -n "$(echo "$configured" | tr -d '[:space:]')" ]; then
		echo "$configured"
	else
		# pip's own default index and the host its files come from.
		python3 -c 'from pip._internal.models.index import PyPI; print(PyPI.url); print("https://" + PyPI.file_storage_domain + "/")' 2>/dev/null || true
	fi
}

if ! command -v python3 >/dev/null 2>&1; then
	log "sandbox network: python3 is missing, so registries and CAs are not looked up; pass --egress-default and --sandbox-ca yourself"
	exit 0
fi

if [ -z "${DRYDOCK_EGRESS_DEFAULT+set}" ]; then
	hosts=()
	while read -r url; do
		[ -n "$url" ] || continue
		hp=$(host_port "$url")
		[ -n "$hp" ] && [[ ! " ${hosts[*]-} " == *" $hp "* ]] && hosts+=("$hp")
	done < <(registries)
	if [ ${#hosts[@]} -gt 0 ]; then
		log "sandboxes may reach the package registries of this machine's npm and pip: ${hosts[*]} (set DRYDOCK_EGRESS_DEFAULT to choose)"
		echo "--egress-default"
		(IFS=,; echo "${hosts[*]}")
		for hp in "${hosts[@]}"; do
			for a in $(getent ahosts "${hp%:*}" 2>/dev/null | awk '{print $1}' | sort -u); do
				if python3 -c 'import ipaddress, sys; sys.exit(ipaddress.ip_address(sys.argv[1]).is_global)' "$a"; then
					log "sandbox network: ${hp%:*} resolves to $a, which is not public; opening that address alone to sandboxes"
					echo "--egress-private"
					echo "$a"
				fi
			done
		done
	fi
fi

if [ -z "${DRYDOCK_SANDBOX_CA+set}" ] && [ -d /usr/local/share/ca-certificates ]; then
	while IFS= read -r f; do
		log "sandboxes trust $f, as this machine does (set DRYDOCK_SANDBOX_CA to choose)"
		echo "--sandbox-ca"
		echo "$f"
	done < <(find /usr/local/share/ca-certificates -type f -name '*.crt' | sort)
fi
