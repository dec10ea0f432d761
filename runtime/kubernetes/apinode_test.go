package kubernetes

import (
	"context"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/runtimetest"
)

// envKubeNode names a real node of the DRYDOCK_TEST_KUBECONFIG cluster: a
// kubelet with containerd and a CNI bridge whose pod addresses this host
// reaches, with the drydock-sandbox images loaded (kube-up.sh with
// DRYDOCK_KUBE_NODE=1 starts one). The tests below run real sandboxes
// there: the image's own toolboxd, started by a real kubelet from the
// objects the runtime made.
const envKubeNode = "DRYDOCK_TEST_KUBE_NODE"

func realNodeRuntime(t *testing.T, env *apiEnv, ns string, mod func(*Options)) *Runtime {
	t.Helper()
	return runtimeOn(t, env.cfg, ns, func(o *Options) {
		// The images are loaded on the node; nothing may be pulled.
		o.ImagePullPolicy = corev1.PullNever
		o.Defaults = drydock.Resources{CPUs: 0.5, MemoryBytes: 512 << 20, WorkspaceBytes: 256 << 20, TmpBytes: 64 << 20}
		o.StartTimeout = 2 * time.Minute
		if mod != nil {
			mod(o)
		}
	})
}

// requireRealNode skips without DRYDOCK_TEST_KUBE_NODE; otherwise it gives
// the test a namespace whose pods are bound to that node.
func requireRealNode(t *testing.T) (*apiEnv, string) {
	t.Helper()
	env := requireAPIServer(t)
	node := os.Getenv(envKubeNode)
	if node == "" {
		t.Skipf("%s is not set: no real node (start one with DRYDOCK_KUBE_NODE=1 scripts/testenv/kube-up.sh)", envKubeNode)
	}
	ns := env.namespace(t)
	newAPIScheduler(t, env.admin, ns, node)
	return env, ns
}

func TestRealNodeConformance(t *testing.T) {
	t.Parallel()
	env, ns := requireRealNode(t)
	t.Cleanup(func() { env.assertNamespaceEmpty(t, ns) })
	runtimetest.Run(t, func(t *testing.T) drydock.Runtime { return realNodeRuntime(t, env, ns, nil) }, runtimetest.Options{
		Image:        "drydock-sandbox:headless",
		ReadyTimeout: time.Minute,
		FailingSpec: func(s drydock.SandboxSpec) drydock.SandboxSpec {
			s.Image = "drydock-test/no-such-image:1"
			return s
		},
	})
}

// The same as TestAPIServerMissingImage, with the real kubelet's report:
// the init container waits in ErrImageNeverPull.
func TestRealNodeMissingImage(t *testing.T) {
	t.Parallel()
	env, ns := requireRealNode(t)
	rt := realNodeRuntime(t, env, ns, func(o *Options) { o.StartTimeout = 30 * time.Second })
	start := time.Now()
	_, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "job-missing-image", Image: "drydock-test/no-such-image:1"})
	took := time.Since(start)
	if code := drydock.ErrorCode(err); code != drydock.EINVALID || !strings.Contains(err.Error(), "ErrImageNeverPull") || took > 20*time.Second {
		t.Errorf("Create with a missing image: %v (code %s) after %v; want %s naming ErrImageNeverPull as soon as the kubelet reports it",
			err, code, took.Round(time.Millisecond), drydock.EINVALID)
	}
	env.assertNamespaceEmpty(t, ns)
}

// Nothing the test node does reaches another machine: an image it lacks is
// pulled through a proxy that is not there (kube-up.sh sets it for
// containerd), so the pull fails on the node before a DNS query or a
// connection leaves. The image names the node's own address, so that this
// check stays on the machine whether the guard holds or not.
func TestRealNodePullsStayOnTheMachine(t *testing.T) {
	t.Parallel()
	env, ns := requireRealNode(t)
	ctx := t.Context()
	node, err := env.admin.CoreV1().Nodes().Get(ctx, os.Getenv(envKubeNode), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var addr net.IP
	for _, a := range node.Status.Addresses {
		if ip := net.ParseIP(a.Address); a.Type == corev1.NodeInternalIP && ip != nil && !ip.IsLoopback() {
			addr = ip
		}
	}
	if addr == nil {
		t.Fatalf("node %s reports no non-loopback internal address (Go never proxies loopback): %v", node.Name, node.Status.Addresses)
	}
	// The node runs on this machine, so its address is one of ours, and a
	// pull that went around the proxy would not leave either.
	local, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(local, func(a net.Addr) bool { n, ok := a.(*net.IPNet); return ok && n.IP.Equal(addr) }) {
		t.Fatalf("node %s's address %s is not this machine's (%v); not pulling from it", node.Name, addr, local)
	}
	no, yes := false, true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pull-" + drydock.RandomHex(4)},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: &no,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: ptr(int64(1000)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "c", Image: net.JoinHostPort(addr.String(), "1") + "/drydock-test/not-here:1", ImagePullPolicy: corev1.PullAlways,
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
	if _, err := env.admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer env.admin.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	var seen []string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		evs, err := env.admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod.Name})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.Reason != "Failed" {
				continue
			}
			if strings.Contains(e.Message, "proxyconnect tcp: dial tcp 127.0.0.1:9") {
				return
			}
			seen = append(seen, e.Message)
		}
		if len(seen) > 0 {
			break
		}
	}
	t.Fatalf("the pull did not go to kube-up.sh's dead proxy; the node's pulls may leave the machine. Failures seen: %q", seen)
}
