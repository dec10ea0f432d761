package kubernetes

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/runtimetest"
	"github.com/drydockhq/drydock/toolbox"
)

// envKubeRuntimeClass names a RuntimeClass of the DRYDOCK_TEST_KUBECONFIG
// cluster whose handler on the real node (DRYDOCK_TEST_KUBE_NODE) is
// gVisor's runsc: DRYDOCK_KUBE_NODE=1 scripts/testenv/kube-up.sh configures
// the node's containerd with containerd-shim-runsc-v1 and creates the
// RuntimeClass "gvisor".
const envKubeRuntimeClass = "DRYDOCK_TEST_KUBE_RUNTIME_CLASS"

// requireGVisorNode skips without a real node or without its gVisor
// RuntimeClass; otherwise it gives the test a namespace bound to the node
// and the class's name.
func requireGVisorNode(t *testing.T) (*apiEnv, string, string) {
	t.Helper()
	class := os.Getenv(envKubeRuntimeClass)
	if class == "" {
		t.Skipf("%s is not set: no gVisor RuntimeClass on the real node (DRYDOCK_KUBE_NODE=1 scripts/testenv/kube-up.sh adds one when it can build gVisor's runsc and containerd shim)", envKubeRuntimeClass)
	}
	env, ns := requireRealNode(t)
	return env, ns, class
}

// startOnNode creates a sandbox pod under runtimeClass ("" for the node's
// default) and waits until its toolboxd answers; it returns the client
// and how long that took from the Create call.
func startOnNode(t *testing.T, rt *Runtime, jobID string) (*drydock.Sandbox, *toolbox.Client, time.Duration) {
	t.Helper()
	start := time.Now()
	sb, tc := startSpecOnNode(t, rt, drydock.SandboxSpec{JobID: jobID, Image: "drydock-sandbox:headless", Profile: drydock.ProfileHeadless})
	return sb, tc, time.Since(start)
}

// startSpecOnNode creates spec's sandbox on the real node, destroys it
// when the test ends, and waits (a minute at most) until its toolboxd is
// ready.
func startSpecOnNode(t *testing.T, rt *Runtime, spec drydock.SandboxSpec) (*drydock.Sandbox, *toolbox.Client) {
	t.Helper()
	sb, err := rt.Create(t.Context(), spec)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rt.Destroy(ctx, sb.ID); err != nil {
			t.Errorf("destroy: %v", err)
		}
	})
	tc := toolbox.New(sb.Endpoint, sb.Token)
	t.Cleanup(tc.Close)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := tc.WaitReady(ctx); err != nil {
		t.Fatalf("sandbox not ready: %v", err)
	}
	return sb, tc
}

// kernelOf is what the sandbox's kernel says of itself: its log (gVisor's
// is its own boot log, which names it, when the seccomp profile lets
// dmesg read it; the host's is closed to the sandbox) and /proc/version
// (gVisor's reads "Linux version 4.19.0-gvisor").
func kernelOf(t *testing.T, tc *toolbox.Client) string {
	t.Helper()
	var out bytes.Buffer
	r, err := tc.Exec(t.Context(), toolbox.ExecRequest{Command: "dmesg 2>&1; cat /proc/version"}, &out, &out)
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("exec: %+v %v %q", r, err, out.String())
	}
	return out.String()
}

// isGVisor tells gVisor's kernel by what kernelOf reads.
func isGVisor(kernel string) bool { return strings.Contains(strings.ToLower(kernel), "gvisor") }

// A sandbox pod under the gVisor RuntimeClass runs gVisor's kernel on the
// real node, and one without it the node's: the class reaches the node's
// containerd as its runsc handler, and is not dropped on the way. The two
// start times are logged for docs/BENCHMARKS.md (not asserted).
func TestRealNodeGVisorKernel(t *testing.T) {
	t.Parallel()
	env, ns, class := requireGVisorNode(t)
	t.Cleanup(func() { env.assertNamespaceEmpty(t, ns) })

	gv := realNodeRuntime(t, env, ns, func(o *Options) { o.RuntimeClassName = class })
	sb, tc, took := startOnNode(t, gv, "job-gvisor")
	if k := kernelOf(t, tc); !isGVisor(k) {
		t.Errorf("the sandbox pod under RuntimeClass %s does not run gVisor's kernel:\n%s", class, k)
	}
	pod, err := env.admin.CoreV1().Pods(ns).Get(t.Context(), sb.ID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rc := pod.Spec.RuntimeClassName; rc == nil || *rc != class {
		t.Errorf("pod runtimeClassName %v, want %s", rc, class)
	}

	runc := realNodeRuntime(t, env, ns, nil)
	_, tc2, took2 := startOnNode(t, runc, "job-runc")
	if k := kernelOf(t, tc2); isGVisor(k) {
		t.Errorf("a sandbox pod without a RuntimeClass runs gVisor's kernel too; the check above proves nothing:\n%s", k)
	}
	t.Logf("Create until toolboxd answers on the real node: gVisor %v, runc %v", took.Round(time.Millisecond), took2.Round(time.Millisecond))
}

// The runtime conformance suite with every sandbox pod under gVisor.
func TestRealNodeGVisorConformance(t *testing.T) {
	t.Parallel()
	env, ns, class := requireGVisorNode(t)
	t.Cleanup(func() { env.assertNamespaceEmpty(t, ns) })
	runtimetest.Run(t, func(t *testing.T) drydock.Runtime {
		return realNodeRuntime(t, env, ns, func(o *Options) { o.RuntimeClassName = class })
	}, runtimetest.Options{
		Image:        "drydock-sandbox:headless",
		ReadyTimeout: time.Minute,
		FailingSpec: func(s drydock.SandboxSpec) drydock.SandboxSpec {
			s.Image = "drydock-test/no-such-image:1"
			return s
		},
	})
}

// The isolation probe of TestRealNodeProbeFromInside, in a pod under
// gVisor, with the same checks.
func TestRealNodeProbeFromInsideUnderGVisor(t *testing.T) {
	t.Parallel()
	env, ns, class := requireGVisorNode(t)
	probeOnNode(t, env, ns, class)
}
