package kubernetes

import (
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

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
