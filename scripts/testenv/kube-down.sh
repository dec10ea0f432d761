#!/bin/sh
# Stops what kube-up.sh started and removes its state: certificates,
# kubeconfigs and etcd's data, so the next kube-up.sh starts an empty
# cluster. With a node (DRYDOCK_KUBE_NODE=1), its pods are deleted first so
# that the kubelet stops them through the CRI (containers, network
# namespaces); containerd's image store stays, as the test dockerd's does.
# The built binaries stay in ~/.cache/drydock/kube. Idempotent.
set -eu

RUN=/run/drydock-test/kube
PKI="$RUN/pki"
NODE_DATA=/var/lib/drydock-test/kube-node
NODE_NAME=drydock-kube-node
STOP="$(dirname "$0")/stop-daemon.sh"

alive() { [ -f "$RUN/$1.pid" ] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }
api() { # METHOD PATH
	curl -sf --max-time 10 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
		-X "$1" "https://127.0.0.1:$(cat "$RUN/apiserver.port")$2"
}

if alive kubelet && alive kube-apiserver; then
	sel="fieldSelector=spec.nodeName%3D$NODE_NAME"
	for ns in $(api GET "/api/v1/pods?$sel" | grep -o '"namespace":"[^"]*"' | cut -d'"' -f4 | sort -u); do
		api DELETE "/api/v1/namespaces/$ns/pods?$sel&gracePeriodSeconds=0" >/dev/null || true
	done
	i=0
	while [ -n "$(ctr -a "$RUN/containerd/containerd.sock" -n k8s.io tasks ls -q 2>/dev/null)" ] && [ "$i" -lt 60 ]; do
		i=$((i + 1))
		sleep 0.5
	done
fi
"$STOP" kubelet "$RUN/kubelet.pid" "$RUN/kubelet.sock"
if alive containerd; then
	# Whatever the kubelet left: containerd's shims outlive containerd.
	for task in $(ctr -a "$RUN/containerd/containerd.sock" -n k8s.io tasks ls -q 2>/dev/null); do
		ctr -a "$RUN/containerd/containerd.sock" -n k8s.io tasks kill -s KILL "$task" 2>/dev/null || true
		ctr -a "$RUN/containerd/containerd.sock" -n k8s.io tasks delete -f "$task" >/dev/null 2>&1 || true
	done
fi
"$STOP" containerd "$RUN/containerd.pid" "$RUN/containerd/containerd.sock"
for name in kube-controller-manager kube-apiserver etcd; do
	"$STOP" "$name" "$RUN/$name.pid" "$RUN/$name.sock"
done
# The kubelet's volume mounts (Secrets, memory emptyDirs), deepest first.
if [ -d "$NODE_DATA/kubelet" ]; then
	# The kubelet also bind-mounts its root directory onto itself.
	awk -v root="$NODE_DATA/kubelet" '$2 == root || index($2, root "/") == 1 { print $2 }' /proc/mounts | sort -r |
		while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
	rm -rf "$NODE_DATA/kubelet"
fi
# What containerd leaves mounted when a pod was not stopped through the CRI
# (network namespaces, root file systems, shm), deepest first; a network
# namespace goes, and its end of the bridge with it, once unmounted.
if [ -d "$RUN" ]; then
	awk -v root="$RUN/" 'index($2, root) == 1 { print $2 }' /proc/mounts | sort -r |
		while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
fi
ip link del drydock-kube0 2>/dev/null || true
while iptables -D FORWARD -i drydock-kube0 ! -o drydock-kube0 -j DROP 2>/dev/null; do :; done
rm -rf /var/lib/cni/networks/drydock-test "$RUN"
