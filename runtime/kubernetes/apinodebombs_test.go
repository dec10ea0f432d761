package kubernetes

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/runtimetest"
	"github.com/drydockhq/drydock/toolbox"
)

// envKubeImage names the headless image the bomb tests run on the real
// node (default drydock-sandbox:headless, the one kube-up.sh loads). Their
// gVisor half needs a toolboxd that applies $TOOLBOXD_TASKS_LIMIT: an image
// built before it fails there, as the pod did before the fix.
const envKubeImage = "DRYDOCK_TEST_KUBE_IMAGE"

// nodeForkBomb starts children that sleep 40 s until 1000 have started,
// retrying each refused start (posix_spawn: forking copies of Python is
// slow in a half-CPU pod; but a gVisor pod refuses posix_spawn with EPERM,
// so fork there). Under runc that is within the node's pids
// limit (4096 on the test node); under gVisor the sandbox's own limit
// (256 here) refuses most of them.
const nodeForkBomb = `import os, time
def spawn():
    os.posix_spawn("/bin/sleep", ["sleep", "40"], {})
def fork():
    if os.fork() == 0:
        os.execv("/bin/sleep", ["sleep", "40"])
started, refused, start = 0, None, spawn
while started < 1000:
    try:
        start()
        started += 1
        if started % 250 == 0:
            print("started", started, flush=True)
    except PermissionError:
        start = fork
    except OSError as e:
        if refused is None:
            refused = e
            print("refused after", started, e, flush=True)
        time.sleep(0.01)
print("all started", flush=True)
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
`

// A fork bomb and a memory bomb run as an agent's commands in a sandbox pod
// on the real node, under runc and under the gVisor RuntimeClass: the pod
// must keep running and toolboxd keep answering through both, and under
// gVisor the bomb must meet the sandbox's own pids limit (a refused start)
// rather than the node's. Before the limits moved inside gVisor on
// Kubernetes, the gVisor pod ended.
func TestRealNodeBombsStayInside(t *testing.T) {
	t.Parallel()
	env, ns := requireRealNode(t)
	t.Cleanup(func() { env.assertNamespaceEmpty(t, ns) })
	image, stale := os.Getenv(envKubeImage), ""
	if image == "" {
		image = "drydock-sandbox:headless"
		stale = fmt.Sprintf("the node's %s has a toolboxd that predates TOOLBOXD_TASKS_LIMIT (rebuild the image, or load one with this tree's toolboxd on the node and name it in %s)", image, envKubeImage)
	}
	for _, kind := range []string{"runc", "gvisor"} {
		t.Run(kind, func(t *testing.T) {
			var mod func(*Options)
			if kind == "gvisor" {
				class := os.Getenv(envKubeRuntimeClass)
				if class == "" {
					t.Skipf("%s is not set: no gVisor RuntimeClass on the real node", envKubeRuntimeClass)
				}
				mod = func(o *Options) { o.RuntimeClassName = class; o.GVisor = true }
			}
			rt := realNodeRuntime(t, env, ns, mod)
			sb, tc := startSpecOnNode(t, rt, drydock.SandboxSpec{
				JobID: "job-bombs-" + kind, Image: image, Profile: drydock.ProfileHeadless,
				Resources: drydock.Resources{MemoryBytes: 256 << 20, PidsLimit: 256},
			})
			alive := func(after string) {
				t.Helper()
				if err := runtimetest.Probe(t.Context(), sb); err != nil {
					t.Fatalf("toolboxd does not answer after %s: %v\n%s", after, err, podReport(t, env, ns, sb.ID))
				}
				pod, err := env.admin.CoreV1().Pods(ns).Get(t.Context(), sb.ID, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if !podRunning(pod) {
					t.Fatalf("the pod stopped after %s:\n%s", after, podReport(t, env, ns, sb.ID))
				}
			}
			// Under gVisor the agent's commands carry the sandbox's pids
			// limit as RLIMIT_NPROC; under runc they must not (the host
			// would count uid 1000 across the node).
			var out lockedWriter
			if _, err := tc.Exec(t.Context(), toolbox.ExecRequest{Command: "grep 'Max processes' /proc/self/limits"}, &out, &out); err != nil {
				t.Fatal(err)
			}
			f := strings.Fields(out.String())
			if len(f) != 5 {
				t.Fatalf("/proc/self/limits: %q", out.String())
			}
			if limited := f[2] == "256" && f[3] == "256"; limited != (kind == "gvisor") {
				if kind == "gvisor" && stale != "" {
					t.Skip(stale)
				}
				t.Fatalf("a command's RLIMIT_NPROC under %s: %q", kind, out.String())
			}
			forkBombOnNode(t, tc, kind == "gvisor")
			alive("the fork bomb")
			memoryBombOnNode(t, tc)
			alive("the memory bombs")
		})
	}
}

// forkBombOnNode runs nodeForkBomb and, while it runs, calls toolboxd
// from 8 clients for 5 s: every file call must succeed, and a command
// start may only be refused. With mustSaturate the bomb must be seen
// holding the sandbox's limit (a refused start) within 25 s.
func forkBombOnNode(t *testing.T, tc *toolbox.Client, mustSaturate bool) {
	t.Helper()
	ctx := t.Context()
	bomb := make(chan error, 1)
	var out lockedWriter
	bombOutput := out.String
	go func() {
		r, err := tc.Exec(ctx, toolbox.ExecRequest{Args: []string{"python3", "-c", nodeForkBomb}, Timeout: drydock.Duration(70 * time.Second)}, &out, &out)
		if err == nil && r.ExitCode != 0 && !r.TimedOut {
			err = fmt.Errorf("the bomb exited %d", r.ExitCode)
		}
		bomb <- err
	}()
	if mustSaturate {
		deadline := time.Now().Add(25 * time.Second)
		for {
			r, err := tc.Exec(ctx, toolbox.ExecRequest{Args: []string{"true"}}, io.Discard, io.Discard)
			if drydock.ErrorCode(err) == drydock.EUNAVAILABLE || (err == nil && r.ExitCode != 0) {
				t.Logf("the bomb holds the sandbox's pids limit: %v", err)
				break
			}
			if err != nil {
				t.Fatalf("toolboxd failed while the bomb grew: %v", err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("the bomb did not meet the sandbox's pids limit within 25 s: %q", bombOutput())
			}
			time.Sleep(50 * time.Millisecond)
		}
	} else {
		// Until every child has started: the fork loop takes the pod's
		// CPU quota, which toolboxd shares, and only the limits are
		// under test here.
		deadline := time.Now().Add(50 * time.Second)
		for !strings.Contains(bombOutput(), "all started") {
			if time.Now().After(deadline) {
				t.Fatalf("the bomb did not start its processes within 50 s: %q", bombOutput())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var mu sync.Mutex
	var failures []string
	var wg sync.WaitGroup
	stop := time.Now().Add(5 * time.Second)
	for w := range 8 {
		wg.Go(func() {
			name := fmt.Sprintf("w%d.txt", w)
			for i := 0; time.Now().Before(stop); i++ {
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				var err error
				switch i % 3 {
				case 0:
					err = tc.WriteFile(cctx, name, []byte("still here"))
				case 1:
					_, err = tc.List(cctx, ".")
				case 2:
					_, err = tc.Exec(cctx, toolbox.ExecRequest{Args: []string{"true"}}, io.Discard, io.Discard)
					if drydock.ErrorCode(err) == drydock.EUNAVAILABLE {
						err = nil // refused while the bomb holds every pid
					}
				}
				cancel()
				if err != nil {
					mu.Lock()
					if len(failures) < 5 {
						failures = append(failures, fmt.Sprintf("call %d of client %d: %v", i, w, err))
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	select {
	case err := <-bomb:
		if err != nil {
			t.Logf("bomb: %v %q", err, bombOutput())
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the bomb's command did not end after its timeout")
	}
}

// memoryBombOnNode runs a growing allocation three times past the
// sandbox's 256 MiB: each must end in error (the kernel's OOM killer under
// runc, toolboxd's guard under gVisor), never toolboxd.
func memoryBombOnNode(t *testing.T, tc *toolbox.Client) {
	t.Helper()
	for i := range 3 {
		var out lockedWriter
		r, err := tc.Exec(t.Context(), toolbox.ExecRequest{Args: []string{"python3", "-c", "b = []\nwhile True: b.append(bytearray(8 << 20))"},
			Timeout: drydock.Duration(60 * time.Second)}, &out, &out)
		if err != nil {
			t.Fatalf("memory bomb %d: %v (output %q)", i, err, out.String())
		}
		if r.ExitCode == 0 {
			t.Fatalf("memory bomb %d: a growing allocation ended without error under a 256 MiB limit: %q", i, out.String())
		}
		t.Logf("memory bomb %d: exit %d, out of memory %+v", i, r.ExitCode, r.OutOfMemory)
	}
}

func podRunning(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil || cs.RestartCount > 0 {
			return false
		}
	}
	return true
}

// podReport is the pod's status and its container's last log lines.
func podReport(t *testing.T, env *apiEnv, ns, name string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 10*time.Second)
	defer cancel()
	pod, err := env.admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "pod: " + err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s %s %s\n", pod.Status.Phase, pod.Status.Reason, pod.Status.Message)
	for _, cs := range pod.Status.ContainerStatuses {
		fmt.Fprintf(&b, "container %s: %+v restarts %d\n", cs.Name, cs.State, cs.RestartCount)
	}
	tail := int64(20)
	if logs, err := env.admin.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: containerName, TailLines: &tail}).DoRaw(ctx); err == nil {
		b.Write(logs)
	}
	return b.String()
}

type lockedWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
