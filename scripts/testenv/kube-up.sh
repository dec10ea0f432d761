#!/bin/sh
# Starts a Kubernetes control plane for Drydock's tests, on 127.0.0.1 only:
# etcd (Debian's etcd-server), kube-apiserver and kube-controller-manager
# (garbage collector, namespace and service account controllers), with no
# node, scheduler or kubelet: runtime/kubernetes's tests play the kubelet
# through the API.
#
# Kubernetes publishes no binaries this machine can fetch, so the two
# binaries are built from the k8s.io/kubernetes module on the Go module
# proxy, once per version, into ~/.cache/drydock/kube/VERSION/bin (about 20 minutes
# and 1 GB of Go build cache on 2 cores; see docs/KUBERNETES-TESTING.md).
# The module zip leaves out staging/ (each staging directory is a module of
# its own), so its go.mod's replace directives, which point there, are
# rewritten to the published k8s.io/* modules of the same minor version.
#
# State lives in /run/drydock-test/kube: a CA and certificates made here
# with openssl (TLS between every component, client certificates for
# every identity), etcd's data, logs and pidfiles. Idempotent: a control
# plane that already answers is left alone. Prints:
#
#   DRYDOCK_TEST_KUBECONFIG          cluster-admin (group system:masters)
#   DRYDOCK_TEST_KUBECONFIG_RUNTIME  a client certificate for the user
#       system:serviceaccount:drydock:drydock, the identity
#       deploy/kubernetes/rbac.yaml binds: it may do only what those
#       manifests grant, once they are applied (the tests apply them)
#
# DRYDOCK_KUBE_VERSION picks another version (v1.37.2 by default).
#
# DRYDOCK_KUBE_NODE=1 adds a real node (see the node section below):
# containerd (Debian's), a CNI bridge and a kubelet built like the rest,
# with the sandbox images copied from the shared test dockerd
# (DRYDOCK_TEST_DOCKER_HOST; DRYDOCK_KUBE_NODE_IMAGES lists them, default
# drydock-sandbox:headless), and prints DRYDOCK_TEST_KUBE_NODE. No
# kube-scheduler: the tests bind their pods to the node they mean. The
# node's containerd also has gVisor's runsc as the runtime handler "runsc"
# and the cluster a RuntimeClass "gvisor" for it (DRYDOCK_TEST_KUBE_RUNTIME_CLASS
# is printed then); a node started before that is restarted once (kubelet
# and containerd only; pods keep running) to take it.
set -eu
. "$(dirname "$0")/../lib.sh"

VERSION=${DRYDOCK_KUBE_VERSION:-v1.37.2}
# Outside the work tree, like the sandbox image cache, so that a fresh clone
# (CI) on the same machine does not build the binaries again.
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/drydock/kube/$VERSION"
BIN="$CACHE/bin"
RUN=/run/drydock-test/kube
PKI="$RUN/pki"
ADMIN="$RUN/admin.kubeconfig"
RUNTIME="$RUN/runtime.kubeconfig"
SERVICE_CIDR=10.96.0.0/16
NODE=${DRYDOCK_KUBE_NODE:-}
NODE_NAME=drydock-kube-node
CMDS="kube-apiserver kube-controller-manager"
if [ -n "$NODE" ]; then
	CMDS="$CMDS kubelet"
fi

say() { echo "kube-up: $*"; }
fail() {
	echo "kube-up: $*" >&2
	exit 1
}

if [ "$(id -u)" != 0 ]; then
	fail "needs root (installs etcd-server, keeps its state in /run/drydock-test)"
fi
for tool in openssl curl flock; do
	command -v "$tool" >/dev/null 2>&1 || fail "$tool missing"
done
mkdir -p "$RUN"

print_env() {
	echo "DRYDOCK_TEST_KUBECONFIG=$ADMIN"
	echo "DRYDOCK_TEST_KUBECONFIG_RUNTIME=$RUNTIME"
	if [ -n "$NODE" ]; then
		echo "DRYDOCK_TEST_KUBE_NODE=$NODE_NAME"
		if [ -n "$GVISOR_CLASS" ]; then
			echo "DRYDOCK_TEST_KUBE_RUNTIME_CLASS=$GVISOR_CLASS"
		fi
	fi
}

# gVisor on the node: runsc and its containerd shim, built once per
# version (scripts/lib.sh). Without them the node runs runc only and the
# tests under the RuntimeClass skip, saying so.
NODE_CONFIG=gvisor-1 # bump when start_node's configuration changes
RUNSC= RUNSC_SHIM= GVISOR_CLASS=
if [ -n "$NODE" ]; then
	if ! { RUNSC=$(ensure_runsc) && RUNSC_SHIM=$(ensure_runsc_shim); }; then
		RUNSC= RUNSC_SHIM=
		say "gVisor's runsc or its containerd shim could not be built: the node gets no gVisor RuntimeClass" >&2
	fi
fi

# gvisor_node_files writes what the runsc handler runs: containerd finds
# the shim as $RUN/bin/containerd-shim-runsc-v1, and the shim runs
# $RUN/runsc with the flags of $RUN/runsc.toml. The shim reads these for
# every new pod, so they are rewritten on every run without a restart.
gvisor_node_files() {
	mkdir -p "$RUN/bin" "$RUN/runsc-root"
	# Debian's containerd (1.6) reads a shim's start output as its bare
	# address; this shim (containerd 2's shim library) prints its bootstrap
	# parameters as JSON ({"version":2,"address":"unix://...",
	# "protocol":"ttrpc"}), which 1.6 then fails to dial. The wrapper hands
	# 1.6 the address alone; every other call goes straight to the shim.
	cat >"$RUN/bin/containerd-shim-runsc-v1.new" <<SH
#!/bin/sh
# The action is the last argument (containerd: -namespace NS -address A -id ID start).
for action; do :; done
if [ "\$action" = start ]; then
	out=\$("$RUNSC_SHIM" "\$@") || { rc=\$?; printf '%s' "\$out"; exit \$rc; }
	case "\$out" in
	"{"*) printf '%s' "\$out" | sed -n 's/.*"address":"\([^"]*\)".*/\1/p' | tr -d '\n' ;;
	*) printf '%s' "\$out" ;;
	esac
	exit 0
fi
exec "$RUNSC_SHIM" "\$@"
SH
	chmod +x "$RUN/bin/containerd-shim-runsc-v1.new"
	# Each file is replaced whole (rename), never seen half written by a
	# pod starting meanwhile.
	mv -f "$RUN/bin/containerd-shim-runsc-v1.new" "$RUN/bin/containerd-shim-runsc-v1"
	# The same oom_score_adj rewrite as for runc (see start_node): runsc
	# gives the sandbox process the lowest score of its pod's containers
	# and fails when it may not lower its own.
	cat >"$RUN/runsc.new" <<SH
#!/bin/sh
prev=
for a in "\$@"; do
	if [ "\$prev" = "--bundle" ] && [ -f "\$a/config.json" ]; then
		sed -i -E 's/"oomScoreAdj": ?-[0-9]+/"oomScoreAdj":0/' "\$a/config.json"
	fi
	prev=\$a
done
exec "$RUNSC" "\$@"
SH
	chmod +x "$RUN/runsc.new"
	mv -f "$RUN/runsc.new" "$RUN/runsc"
	# Not oci-seccomp: see runsc_runtimes in scripts/lib.sh (posix_spawn
	# failed in a gVisor pod with it). No host-uds: toolboxd is reached over
	# the pod network here, and the sandbox needs no socket of the node.
	# systrap is runsc's default platform; kvm hangs on these hosts.
	cat >"$RUN/runsc.toml.new" <<TOML
binary_name = "$RUN/runsc"
root = "$RUN/runsc-root"
[runsc_config]
  platform = "systrap"
TOML
	mv -f "$RUN/runsc.toml.new" "$RUN/runsc.toml"
}

NODE_DATA=/var/lib/drydock-test/kube-node
CTR_SOCK="$RUN/containerd/containerd.sock"
ctr_k8s() { ctr -a "$CTR_SOCK" -n k8s.io "$@"; }
NODE_IMAGES="drydock-test/pause:1 ${DRYDOCK_KUBE_NODE_IMAGES:-drydock-sandbox:headless}"

# node_has_image NAME: the node's containerd has the image (docker save
# names it docker.io/NAME, or docker.io/library/NAME without a '/').
node_has_image() {
	ctr_k8s images ls -q 2>/dev/null | grep -qFx -e "docker.io/$1" -e "docker.io/library/$1"
}

# node_images_present: the node still has every image it was given. The
# kubelet's image garbage collector removes them all, the pause image
# included, when the disk fills (seen on a shared machine): then no pod
# starts until they are copied in again.
node_images_present() {
	for img in $NODE_IMAGES; do
		node_has_image "$img" || return 1
	done
}

# node_stale: the running node's containerd was configured by an older
# kube-up.sh (before the runsc handler), so it lacks what this one adds.
node_stale() {
	[ -n "$RUNSC_SHIM" ] && ! grep -qx "# node config $NODE_CONFIG" "$RUN/containerd.toml" 2>/dev/null
}

# ensure_runtime_class: the RuntimeClass "gvisor" that Drydock ships
# (deploy/kubernetes/runtimeclasses/gvisor.yaml: handler runsc, gVisor's
# overhead, a nodeSelector on a label) applied as it is, and that label on
# the node, when the node's containerd has the handler. The cluster's store
# starts empty with every control plane, so both are applied on every run
# (server-side apply: the same object again changes nothing).
ensure_runtime_class() {
	grep -qx "# node config $NODE_CONFIG" "$RUN/containerd.toml" 2>/dev/null && [ -n "$RUNSC_SHIM" ] || return 0
	manifest="$(dirname "$0")/../../deploy/kubernetes/runtimeclasses/gvisor.yaml"
	api="https://127.0.0.1:$(cat "$RUN/apiserver.port")"
	auth="--cacert $PKI/ca.crt --cert $PKI/admin.crt --key $PKI/admin.key"
	# shellcheck disable=SC2086 # the curl options are words
	curl -sf --max-time 5 $auth -X PATCH -H 'Content-Type: application/apply-patch+yaml' --data-binary @"$manifest" \
		"$api/apis/node.k8s.io/v1/runtimeclasses/gvisor?fieldManager=drydock-kube-up&force=true" >/dev/null ||
		fail "cannot apply $manifest"
	# The class's nodeSelector (one "key: value" line under nodeSelector:).
	label=$(awk '/nodeSelector:/ { on = 1; next } on && NF == 2 { gsub(/[":]/, ""); printf "{\"metadata\":{\"labels\":{\"%s\":\"%s\"}}}", $1, $2; exit }' "$manifest")
	[ -n "$label" ] || fail "no nodeSelector label in $manifest"
	# shellcheck disable=SC2086
	curl -sf --max-time 5 $auth -X PATCH -H 'Content-Type: application/merge-patch+json' -d "$label" \
		"$api/api/v1/nodes/$NODE_NAME" >/dev/null || fail "cannot label node $NODE_NAME for the RuntimeClass gvisor"
	GVISOR_CLASS=gvisor
}

# ready asks the API server's readyz as cluster-admin.
ready() {
	[ -f "$RUN/apiserver.port" ] || return 1
	curl -sf --max-time 2 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
		"https://127.0.0.1:$(cat "$RUN/apiserver.port")/readyz" >/dev/null 2>&1
}

alive() { [ -f "$RUN/$1.pid" ] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }

# PLANE_UP: the control plane answers, and only the node is to be added
# (kube-up.sh, then DRYDOCK_KUBE_NODE=1 kube-up.sh once the images exist).
PLANE_UP=
if alive etcd && alive kube-apiserver && alive kube-controller-manager && ready; then
	if [ -n "$NODE" ] && alive containerd && alive kubelet && ! node_stale && ! node_images_present; then
		PLANE_UP=1 NODE_REIMPORT=1 # below: the images only
	elif [ -z "$NODE" ] || { alive containerd && alive kubelet && ! node_stale; }; then
		say "control plane already running (kube-apiserver pid $(cat "$RUN/kube-apiserver.pid"), port $(cat "$RUN/apiserver.port"))"
		if [ -n "$NODE" ] && [ -n "$RUNSC_SHIM" ]; then
			gvisor_node_files
			ensure_runtime_class
		fi
		print_env
		exit 0
	fi
	PLANE_UP=1
fi
# NODE_RESTART: the node runs with an older configuration. Its kubelet and
# containerd are restarted with the new one; running pods keep running
# (containerd's shims outlive it, and both pick their pods up again), and
# the API server sees the node Ready again within seconds.
NODE_RESTART=
if [ -n "${NODE_REIMPORT:-}" ]; then
	:
elif [ -n "$PLANE_UP" ] && alive containerd && alive kubelet && node_stale; then
	NODE_RESTART=1
elif alive kubelet || alive containerd || { [ -z "$PLANE_UP" ] && { alive etcd || alive kube-apiserver || alive kube-controller-manager; }; }; then
	fail "a part of the control plane runs but it does not answer; run scripts/testenv/kube-down.sh first"
fi

# --- build ------------------------------------------------------------------

# build CMD...: builds the commands into $BIN.
build() {
	command -v go >/dev/null 2>&1 || fail "go missing: it builds kube-apiserver from the module proxy"
	say "building $* $VERSION into $BIN (once per version; ~15 min on 2 cores)"
	minor=$(echo "$VERSION" | sed -n 's/^v1\.\([0-9]*\)\.[0-9]*$/\1/p')
	[ -n "$minor" ] || fail "DRYDOCK_KUBE_VERSION=$VERSION: want v1.MINOR.PATCH"
	dir=$(cd / && GOWORK=off GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -n "$dir" ] && [ -f "$dir/go.mod" ] || fail "go mod download k8s.io/kubernetes@$VERSION gave no source"
	src="$CACHE/src"
	rm -rf "$src"
	mkdir -p "$CACHE"
	cp -r "$dir" "$src"
	chmod -R u+w "$src"
	# go.work lists the staging directories the zip does not have.
	rm -f "$src/go.work" "$src/go.work.sum"
	awk -v pv="v0.$minor.${VERSION##*.}" '
		/^replace \(/ { inrep = 1; print; next }
		inrep && /^\)/ { inrep = 0; print; next }
		inrep && /=> \.\/staging\// { print "\t" $1 " => " $1 " " pv; next }
		{ print }' "$src/go.mod" >"$src/go.mod.new"
	mv "$src/go.mod.new" "$src/go.mod"
	# The version the binaries report (/version, and the emulation version
	# checks); hack/lib/version.sh sets the same from git.
	pkg=k8s.io/component-base/version
	ld="-s -w -X $pkg.gitVersion=$VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	pkgs=
	for c in "$@"; do
		pkgs="$pkgs ./cmd/$c"
	done
	mkdir -p "$BIN"
	# shellcheck disable=SC2086 # one word per package
	if ! (cd "$src" && GOWORK=off GOFLAGS=-mod=mod nice go build -trimpath -ldflags "$ld" -o "$BIN/" $pkgs) >"$CACHE/build.log" 2>&1; then
		tail -n 30 "$CACHE/build.log" >&2
		fail "build failed (log: $CACHE/build.log)"
	fi
	rm -rf "$src"
	say "built $(du -sh "$BIN" | cut -f1) of binaries"
}

mkdir -p "$(dirname "$CACHE")"
(
	# Two test runs starting at once build once.
	flock 9
	missing=
	for c in $CMDS; do
		[ -x "$BIN/$c" ] || missing="$missing $c"
	done
	if [ -n "$missing" ]; then
		# shellcheck disable=SC2086 # one word per command
		build $missing
	fi
) 9>"$CACHE.lock"

if ! command -v etcd >/dev/null 2>&1; then
	say "installing etcd-server"
	if ! { apt-get -o DPkg::Lock::Timeout=900 update -q && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends etcd-server; } >"$RUN/apt.log" 2>&1; then
		cat "$RUN/apt.log" >&2
		exit 1
	fi
fi

# --- certificates -----------------------------------------------------------

# cert NAME SUBJECT [SAN]: a key and a certificate signed by the test CA.
cert() {
	[ -s "$PKI/$1.crt" ] && return
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$PKI/$1.key" \
		-subj "$2" -out "$PKI/$1.csr" 2>/dev/null
	ext="$PKI/$1.ext"
	if [ -n "${3:-}" ]; then
		printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$3" >"$ext"
	else
		printf 'extendedKeyUsage=clientAuth\n' >"$ext"
	fi
	openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
		-days 365 -extfile "$ext" -out "$PKI/$1.crt" 2>/dev/null
	rm -f "$PKI/$1.csr" "$ext"
}

(umask 077 && mkdir -p "$PKI")
if [ ! -s "$PKI/ca.crt" ]; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 365 \
		-subj "/CN=drydock-test-kube-ca" -keyout "$PKI/ca.key" -out "$PKI/ca.crt" 2>/dev/null
fi
(
	umask 077
	local_san="IP:127.0.0.1,DNS:localhost"
	cert etcd "/CN=etcd" "$local_san"
	# The first address of the service range is the kubernetes Service's.
	cert apiserver "/CN=kube-apiserver" "$local_san,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
	cert apiserver-etcd "/CN=kube-apiserver-etcd-client"
	cert admin "/O=system:masters/CN=drydock-test-admin"
	# Every controller acts as this one identity (no
	# --use-service-account-credentials): the bootstrap role alone would
	# not cover them all.
	cert controller-manager "/O=system:masters/CN=system:kube-controller-manager"
	# The user name a service account's token authenticates as: RBAC binds
	# it exactly as it binds the account (a cert carries no
	# system:serviceaccounts group, and the manifests bind none).
	cert runtime "/CN=system:serviceaccount:drydock:drydock"
	# The node's kubelet, as cluster-admin: there is no Node authorizer.
	cert kubelet "/O=system:masters/CN=system:node:$NODE_NAME"
	[ -s "$PKI/sa.key" ] || openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$PKI/sa.key" 2>/dev/null
	[ -s "$PKI/sa.pub" ] || openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
)

# --- ports ------------------------------------------------------------------

# free_port FIRST: the first port from FIRST on that nothing listens on.
free_port() {
	p=$1
	while command -v ss >/dev/null 2>&1 && [ -n "$(ss -Hltn "( sport = :$p )")" ]; do
		p=$((p + 1))
		[ "$p" -le $(($1 + 100)) ] || fail "no free port in $1-$p"
	done
	echo "$p"
}

# wait_for NAME TRIES CHECK...: polls CHECK every half second.
wait_for() {
	name=$1 tries=$2
	shift 2
	i=0
	until "$@"; do
		i=$((i + 1))
		if [ "$i" -gt "$tries" ] || ! alive "$name"; then
			echo "kube-up: $name did not come up; last log lines:" >&2
			tail -n 20 "$RUN/$name.log" >&2
			exit 1
		fi
		sleep 0.5
	done
}

start() {
	name=$1
	shift
	nohup "$@" >"$RUN/$name.log" 2>&1 </dev/null &
	echo $! >"$RUN/$name.pid"
}

# --- etcd -------------------------------------------------------------------

start_etcd() {
	etcd_port=$(free_port 52379)
	peer_port=$(free_port $((etcd_port + 1)))
	# A fresh store every start: the tests want an empty cluster, as from
	# postgres-up.sh.
	rm -rf "$RUN/etcd"
	(umask 077 && mkdir -p "$RUN/etcd")
	start etcd etcd --name drydock-test --data-dir "$RUN/etcd" \
		--listen-client-urls "https://127.0.0.1:$etcd_port" --advertise-client-urls "https://127.0.0.1:$etcd_port" \
		--listen-peer-urls "https://127.0.0.1:$peer_port" --initial-advertise-peer-urls "https://127.0.0.1:$peer_port" \
		--initial-cluster "drydock-test=https://127.0.0.1:$peer_port" --initial-cluster-state new \
		--cert-file "$PKI/etcd.crt" --key-file "$PKI/etcd.key" --client-cert-auth --trusted-ca-file "$PKI/ca.crt" \
		--peer-cert-file "$PKI/etcd.crt" --peer-key-file "$PKI/etcd.key" --peer-client-cert-auth --peer-trusted-ca-file "$PKI/ca.crt"
	etcd_ready() {
		curl -sf --max-time 2 --cacert "$PKI/ca.crt" --cert "$PKI/apiserver-etcd.crt" --key "$PKI/apiserver-etcd.key" \
			"https://127.0.0.1:$etcd_port/health" 2>/dev/null | grep -q '"health":"true"'
	}
	wait_for etcd 60 etcd_ready
}

# --- kube-apiserver ---------------------------------------------------------

start_apiserver() {
	api_port=$(free_port 56443)
	echo "$api_port" >"$RUN/apiserver.port"
	# Admission: the defaults (PodSecurity, ServiceAccount, RuntimeClass,
	# NamespaceLifecycle, LimitRanger, ResourceQuota...) as in any cluster, plus
	# OwnerReferencesPermissionEnforcement, which some distributions enable, so
	# the runtime's adopting of its Secret and NetworkPolicy is checked too.
	# --min-request-timeout=5 ends every watch after 5 to 10 s (30 to 60 min by
	# default), so that the tests see the runtime reopen its watches. The
	# endpoint reconciler would publish the advertised address as the
	# kubernetes Service's endpoint, and refuses a loopback one: nothing here
	# reaches the API through that Service.
	start kube-apiserver "$BIN/kube-apiserver" \
		--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$api_port" \
		--etcd-servers="https://127.0.0.1:$etcd_port" --etcd-cafile="$PKI/ca.crt" \
		--etcd-certfile="$PKI/apiserver-etcd.crt" --etcd-keyfile="$PKI/apiserver-etcd.key" \
		--tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
		--client-ca-file="$PKI/ca.crt" --authorization-mode=RBAC \
		--service-account-issuer=https://kubernetes.default.svc \
		--service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
		--service-cluster-ip-range="$SERVICE_CIDR" \
		--enable-admission-plugins=OwnerReferencesPermissionEnforcement \
		--min-request-timeout=5 \
		--endpoint-reconciler-type=none \
		--profiling=false
	wait_for kube-apiserver 240 ready
}

# kubeconfig writes FILE only when it changes, and whole (rename): a
# re-run on a running cluster must not hand a test reading it half a file.
kubeconfig() { # FILE USER CERT
	(
		umask 077
		cat >"$1.new" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: drydock-test
    cluster:
      server: https://127.0.0.1:$api_port
      certificate-authority: $PKI/ca.crt
users:
  - name: $2
    user:
      client-certificate: $PKI/$3.crt
      client-key: $PKI/$3.key
contexts:
  - name: $2
    context: {cluster: drydock-test, user: $2}
current-context: $2
EOF
		if cmp -s "$1.new" "$1"; then
			rm -f "$1.new"
		else
			mv -f "$1.new" "$1"
		fi
	)
}
if [ -z "$PLANE_UP" ]; then
	start_etcd
	start_apiserver
else
	api_port=$(cat "$RUN/apiserver.port")
fi
kubeconfig "$ADMIN" drydock-test-admin admin
kubeconfig "$RUNTIME" drydock-runtime runtime
kubeconfig "$RUN/controller-manager.kubeconfig" kube-controller-manager controller-manager
kubeconfig "$RUN/kubelet.kubeconfig" kubelet kubelet

# --- kube-controller-manager ------------------------------------------------

start_controller_manager() {
	# Only the controllers a cluster without nodes can use and the runtime
	# relies on: the garbage collector (a sandbox's Secret and NetworkPolicy
	# go with its pod), namespace deletion, and the default service account
	# the ServiceAccount admission plugin wants in every namespace.
	kcm_port=$(free_port 51257)
	start kube-controller-manager "$BIN/kube-controller-manager" \
		--kubeconfig="$RUN/controller-manager.kubeconfig" \
		--authentication-kubeconfig="$RUN/controller-manager.kubeconfig" \
		--authorization-kubeconfig="$RUN/controller-manager.kubeconfig" \
		--bind-address=127.0.0.1 --secure-port="$kcm_port" --leader-elect=false \
		--controllers=garbage-collector-controller,namespace-controller,serviceaccount-controller \
		--root-ca-file="$PKI/ca.crt" --service-account-private-key-file="$PKI/sa.key" \
		--cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
		--profiling=false
	kcm_ready() {
		curl -sfk --max-time 2 "https://127.0.0.1:$kcm_port/healthz" >/dev/null 2>&1
	}
	wait_for kube-controller-manager 120 kcm_ready
}
if [ -z "$PLANE_UP" ]; then
	start_controller_manager
fi

# --- node (DRYDOCK_KUBE_NODE=1) ---------------------------------------------

# A real node: Debian's containerd (its own, not the test dockerd's) with
# a CNI bridge that has no uplink (pods reach this host and each other,
# nothing beyond), and a kubelet. Pod addresses are in 10.244.250.0/24 on
# the bridge drydock-kube0; the tests reach toolboxd there.

# import_image NAME: copies an image from the test dockerd into containerd,
# unless the same image (by id) was copied before.
import_image() {
	id=$(DOCKER_HOST=$DRYDOCK_TEST_DOCKER_HOST docker image inspect -f '{{.Id}}' "$1" 2>/dev/null) ||
		fail "image $1 is not in the test dockerd ($DRYDOCK_TEST_DOCKER_HOST)"
	mark="$NODE_DATA/images/$(echo "$1" | tr '/:' '__')"
	if [ "$(cat "$mark" 2>/dev/null)" = "$id" ] && node_has_image "$1"; then
		return
	fi
	say "copying $1 into the node's containerd"
	DOCKER_HOST=$DRYDOCK_TEST_DOCKER_HOST docker save "$1" | ctr_k8s images import - >/dev/null
	echo "$id" >"$mark"
}

# pause_image builds the image that holds a pod's namespaces (the kubelet's
# sandbox image) from a few lines of Go: registry.k8s.io is out of reach.
pause_image() {
	DOCKER_HOST=$DRYDOCK_TEST_DOCKER_HOST docker image inspect drydock-test/pause:1 >/dev/null 2>&1 && return
	dir=$(mktemp -d)
	cat >"$dir/main.go" <<'GO'
// pause holds a pod's namespaces: it sleeps until SIGINT or SIGTERM and
// reaps orphans as PID 1.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, _ := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 {
				break
			}
		}
	}
}
GO
	printf 'module pause\n\ngo 1.22\n' >"$dir/go.mod"
	printf 'FROM scratch\nCOPY pause /pause\nENTRYPOINT ["/pause"]\n' >"$dir/Dockerfile"
	(cd "$dir" && CGO_ENABLED=0 GOWORK=off go build -trimpath -ldflags "-s -w" -o pause . &&
		DOCKER_HOST=$DRYDOCK_TEST_DOCKER_HOST docker build -q -t drydock-test/pause:1 . >/dev/null) ||
		fail "building the pause image failed"
	rm -rf "$dir"
}

start_node() {
	[ -n "${DRYDOCK_TEST_DOCKER_HOST:-}" ] ||
		fail "DRYDOCK_KUBE_NODE=1 copies images from the shared test dockerd: set DRYDOCK_TEST_DOCKER_HOST (scripts/testenv/docker-up.sh)"
	if ! command -v containerd >/dev/null 2>&1 || [ ! -x /usr/lib/cni/bridge ]; then
		say "installing containerd containernetworking-plugins"
		if ! { apt-get -o DPkg::Lock::Timeout=900 update -q && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends containerd runc containernetworking-plugins; } >"$RUN/apt.log" 2>&1; then
			cat "$RUN/apt.log" >&2
			exit 1
		fi
	fi
	mkdir -p "$RUN/containerd" "$RUN/cni" "$NODE_DATA/containerd" "$NODE_DATA/images" "$NODE_DATA/kubelet"
	# This machine's sessions lack CAP_SYS_RESOURCE: no process may lower
	# its oom_score_adj below 0, and the kubelet asks -998 for pod
	# sandboxes and -997 for Guaranteed pods, which runc then fails on
	# ("can't get final child's PID from pipe"). Raise them to 0.
	cat >"$RUN/runc" <<'SH'
#!/bin/sh
prev=
for a in "$@"; do
	if [ "$prev" = "--bundle" ] && [ -f "$a/config.json" ]; then
		sed -i -E 's/"oomScoreAdj": ?-[0-9]+/"oomScoreAdj":0/' "$a/config.json"
	fi
	prev=$a
done
exec runc "$@"
SH
	sed -i "s|^exec runc|exec $(command -v runc)|" "$RUN/runc"
	chmod +x "$RUN/runc"
	gvisor_runtime=
	if [ -n "$RUNSC_SHIM" ]; then
		gvisor_node_files
		gvisor_runtime="
    # gVisor (RuntimeClass gvisor): its shim, found on containerd's PATH
    # (\$RUN/bin), runs the runsc that runsc.toml names.
    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runsc]
      runtime_type = \"io.containerd.runsc.v1\"
      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runsc.options]
        TypeUrl = \"io.containerd.runsc.v1.options\"
        ConfigPath = \"$RUN/runsc.toml\""
	fi
	cat >"$RUN/containerd.toml" <<TOML
# node config $NODE_CONFIG
version = 2
root = "$NODE_DATA/containerd"
state = "$RUN/containerd"
[grpc]
  address = "$CTR_SOCK"
[ttrpc]
  address = "$CTR_SOCK.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/drydock-test/pause:1"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # Pod network namespaces under the state directory, not /var/run/netns,
  # so that kube-down.sh finds every one of them.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$RUN/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "$RUN/runc"$gvisor_runtime
TOML
	cat >"$RUN/cni/10-drydock.conflist" <<'JSON'
{"cniVersion": "1.0.0", "name": "drydock-test", "plugins": [
  {"type": "bridge", "bridge": "drydock-kube0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.250.0/24"}]]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}
]}
JSON
	# Nothing a test pod does may leave the machine. The bridge does not
	# masquerade, but the host forwards (dockerd turns forwarding on), so a
	# pod's packets to any other address would go out with its own source
	# address: they are dropped. Pod to host (the gateway, toolboxd's
	# callers) is input, not forwarding, and stays open.
	if ! iptables -C FORWARD -i drydock-kube0 ! -o drydock-kube0 -j DROP 2>/dev/null; then
		iptables -I FORWARD -i drydock-kube0 ! -o drydock-kube0 -j DROP ||
			fail "cannot add the iptables rule that keeps the node's pods off the network"
	fi
	# Image pulls (a pod whose image the node lacks) go to a proxy that is
	# not there, so they fail here without a DNS query for the registry.
	start containerd env HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost \
		PATH="$RUN/bin:$PATH" containerd --config "$RUN/containerd.toml"
	ctr_ready() { ctr -a "$CTR_SOCK" version >/dev/null 2>&1; }
	wait_for containerd 60 ctr_ready
	node_images

	# cgroup v1 (this machine's) is still allowed; no swap check; eviction
	# only when the disk is all but full, so that a busy shared machine
	# does not evict test pods.
	cat >"$RUN/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $(free_port 10350)
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://$CTR_SOCK
imageServiceEndpoint: unix://$CTR_SOCK
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
podPidsLimit: 4096
maxPods: 30
resolvConf: ""
YAML
	start kubelet "$BIN/kubelet" --config "$RUN/kubelet.yaml" --kubeconfig "$RUN/kubelet.kubeconfig" \
		--hostname-override "$NODE_NAME" --root-dir "$NODE_DATA/kubelet" --cert-dir "$PKI/kubelet-serving"
	node_ready() {
		curl -sf --max-time 2 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
			"https://127.0.0.1:$api_port/api/v1/nodes/$NODE_NAME" 2>/dev/null |
			tr -d ' \n' | grep -q '"type":"Ready","status":"True"'
	}
	wait_for kubelet 120 node_ready
	# The node lifecycle controller lifts the not-ready taint a kubelet
	# registers with; it does not run here (it would mark the tests'
	# kubelets' nodes, which renew no lease, unreachable).
	curl -sf --max-time 5 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
		-X PATCH -H 'Content-Type: application/merge-patch+json' -d '{"spec":{"taints":null}}' \
		"https://127.0.0.1:$api_port/api/v1/nodes/$NODE_NAME" >/dev/null
	say "node $NODE_NAME started (kubelet pid $(cat "$RUN/kubelet.pid"), containerd socket $CTR_SOCK)"
}

# node_images copies the images the node runs from the test dockerd.
node_images() {
	pause_image
	for img in $NODE_IMAGES; do
		import_image "$img"
	done
}

# stop_node stops the kubelet and containerd for NODE_RESTART, leaving the
# pods, their shims and the sandboxes under them running.
stop_node() {
	say "restarting node $NODE_NAME (kubelet and containerd) to add gVisor's runtime handler"
	"$(dirname "$0")/stop-daemon.sh" kubelet "$RUN/kubelet.pid" "$RUN/kubelet.sock" >/dev/null
	"$(dirname "$0")/stop-daemon.sh" containerd "$RUN/containerd.pid" "$CTR_SOCK" >/dev/null
}
if [ -n "$NODE" ]; then
	if [ -n "${NODE_REIMPORT:-}" ]; then
		[ -n "${DRYDOCK_TEST_DOCKER_HOST:-}" ] || fail "the node lost its images; set DRYDOCK_TEST_DOCKER_HOST to copy them in again"
		say "the node lost images (the kubelet's image garbage collector, on a full disk?): copying them in again"
		node_images
		[ -z "$RUNSC_SHIM" ] || gvisor_node_files
	else
		if [ -n "$NODE_RESTART" ]; then
			stop_node
		fi
		start_node
	fi
	ensure_runtime_class
fi

if [ -z "$PLANE_UP" ]; then
	say "control plane $VERSION started (kube-apiserver pid $(cat "$RUN/kube-apiserver.pid") on 127.0.0.1:$api_port, logs in $RUN)"
fi
print_env
