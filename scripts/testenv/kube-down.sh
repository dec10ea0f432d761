#!/bin/sh
# Stops the control plane kube-up.sh started (kube-controller-manager,
# kube-apiserver, etcd, in that order) and removes its state: certificates,
# kubeconfigs and etcd's data, so the next kube-up.sh starts an empty
# cluster. The built binaries stay in .cache/kube. Idempotent.
set -eu

RUN=/run/drydock-test/kube
STOP="$(dirname "$0")/stop-daemon.sh"

for name in kube-controller-manager kube-apiserver etcd; do
	"$STOP" "$name" "$RUN/$name.pid" "$RUN/$name.sock"
done
rm -rf "$RUN"
