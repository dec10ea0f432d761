// Package kubernetes implements drydock.Runtime on a Kubernetes cluster
// through client-go.
//
// A sandbox is three objects in one namespace, all named after the sandbox
// id (drydock-<16 hex digits>) and labelled drydock.managed=true:
//
//   - a Secret with toolboxd's token and the VNC password, which a restarted
//     orchestrator reads back; the pod's init container copies them, as the
//     file TOOLBOXD_SECRETS_FILE names, into a memory emptyDir, and toolboxd
//     removes it at start (never the environment, which the sandbox's
//     processes can read through PID 1);
//   - a NetworkPolicy that lets only the orchestrator's pods reach toolboxd's
//     port, and lets the pod reach nothing but the orchestrator's egress
//     gateway port (Options.EgressGateway; nothing at all without one). The
//     gateway (package egress) applies the job's allowlist by host name on
//     every connection, as the socket proxy does on Docker: a NetworkPolicy
//     matches addresses only, so the list itself never becomes policy, and
//     a change of list needs no change of any object. toolboxd forwards the
//     pod's 127.0.0.1:3128 to the gateway (TOOLBOXD_EGRESS_GATEWAY), with a
//     hello that names the sandbox and proves its token;
//   - the Pod: uid/gid 1000, runAsNonRoot, no privilege escalation, all
//     capabilities dropped, read-only root, the runtime's default seccomp
//     profile, no service account token, no service links, CPU, memory and
//     ephemeral-storage requests equal to limits, size-limited emptyDir
//     volumes for /workspace, /tmp and /home/agent, and the RuntimeClass
//     chosen in Options (gVisor or Kata) for VM-grade isolation. Under
//     gVisor toolboxd enforces the pids and memory limits inside the pod
//     (TOOLBOXD_TASKS_LIMIT, TOOLBOXD_MEMORY_LIMIT; see gvisorLimits).
//
// toolboxd listens on TCP in the pod (TOOLBOXD_LISTEN=tcp://0.0.0.0:PORT)
// and is reached at the pod IP with its token. The Secret and the policy are
// owned by the pod, so the garbage collector removes them if the pod is
// deleted by anything but Destroy.
//
// Labels: Kubernetes label values are at most 63 characters of a small
// alphabet, and drydock labels (a node id like "host:8080", test names)
// need not be. Each label is stored as a Kubernetes label when it is valid
// and as a hash otherwise, for the selector; the exact labels are kept in
// the drydock.labels annotation, which List checks.
//
// The runtime needs the permissions PolicyRules lists, in its namespace
// only. The tests drive client-go's fake clientset with a small kubelet of
// their own (kubelet_test.go) and, when DRYDOCK_TEST_KUBECONFIG is set, a
// real API server, controller manager and (DRYDOCK_TEST_KUBE_NODE) a real
// kubelet that runs the sandbox image (api*_test.go; see
// docs/KUBERNETES-TESTING.md). No CNI there enforces NetworkPolicy.
package kubernetes
