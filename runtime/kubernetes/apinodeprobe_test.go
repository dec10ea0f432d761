package kubernetes

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/runtimetest"
	"github.com/drydockhq/drydock/toolbox"
)

// TestRealNodeProbeFromInside runs runtimetest's isolation probe through
// toolboxd in a sandbox pod on the real node (containerd and a real kubelet),
// as runtime/docker's TestProbeFromInside does on Docker and Podman, and
// applies the same checks. What differs is only what a pod is made of; each
// difference is explained where it is allowed.
func TestRealNodeProbeFromInside(t *testing.T) {
	t.Parallel()
	env, ns := requireRealNode(t)
	probeOnNode(t, env, ns, "")
}

// probeOnNode runs the probe in a sandbox pod of ns under runtimeClass (""
// for the node's default, runc) and checks it.
func probeOnNode(t *testing.T, env *apiEnv, ns, runtimeClass string) {
	t.Helper()
	t.Cleanup(func() { env.assertNamespaceEmpty(t, ns) })
	rt := realNodeRuntime(t, env, ns, func(o *Options) { o.RuntimeClassName = runtimeClass })
	ctx := t.Context()
	sb, tc := startSpecOnNode(t, rt, drydock.SandboxSpec{JobID: "job-probe", Image: "drydock-sandbox:headless", Profile: drydock.ProfileHeadless})

	var out, errOut bytes.Buffer
	r, err := tc.Exec(ctx, toolbox.ExecRequest{Args: []string{"python3", "-c", runtimetest.ProbeScript}}, &out, &errOut)
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("probe: %+v %v\nstderr: %s", r, err, errOut.String())
	}
	p := runtimetest.ParseProbe(t, out.String(), errOut.String())
	// Under gVisor the pod's containers run on gVisor's kernel, and what
	// they see of mounts and processes is that kernel's view.
	gvisor := isGVisor(kernelOf(t, tc))
	if runtimeClass != "" && !gvisor {
		t.Fatalf("the pod under RuntimeClass %s does not run gVisor's kernel", runtimeClass)
	}
	t.Logf("mountinfo:\n%s", p.Mountinfo)
	t.Logf("processes: %v", p.Procs)
	pod, err := env.admin.CoreV1().Pods(ns).Get(ctx, sb.ID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := runtimetest.ProbeOptions{
		// The pod's emptyDirs. The workspace, /tmp and the home directory
		// are on the node's disk (the kubelet's pod directory), not in
		// memory as on Docker: that is what an emptyDir without medium
		// Memory is, and their sizeLimit and the pod's ephemeral-storage
		// limit bound them (the kubelet evicts the pod past them). The
		// boot dir, which held the token until toolboxd removed it, is
		// medium Memory, a tmpfs.
		Volumes: []string{workspaceDir, tmpDir, homeDir, bootDir},
		Volume: func(m runtimetest.ProbeMount) error {
			name := map[string]string{workspaceDir: "workspace", tmpDir: "tmp", homeDir: "home", bootDir: "boot"}[m.Point]
			if gvisor {
				// gVisor's kernel reaches each of the pod's volumes
				// through its gofer, which serves the one directory the
				// kubelet made for it (a 9p mount rooted at that
				// directory): what backs it
				// is not visible from inside, so the pod spec's volumes
				// are checked below, the boot dir's medium included.
				if m.FSType != "9p" || m.Root != "/" {
					return fmt.Errorf("want gVisor's gofer mount of the pod's emptyDir %q", name)
				}
				return nil
			}
			if m.Point == bootDir {
				if m.FSType != "tmpfs" {
					return fmt.Errorf("want a tmpfs (emptyDir medium Memory)")
				}
				return nil
			}
			// The root of the bind is the volume's own directory, never
			// anything above it on the node.
			if !strings.HasSuffix(m.Root, "/volumes/kubernetes.io~empty-dir/"+name) {
				return fmt.Errorf("want the pod's emptyDir %q", name)
			}
			return nil
		},
		// The kubelet's per-pod files: /etc/hosts, which it writes for
		// every pod, /etc/hostname and /etc/resolv.conf from containerd's
		// pod sandbox (all root's, 0644), and /dev/termination-log, which
		// the kubelet reads a termination message from. A pod always has
		// them, and none is the node's own file. The kubelet makes
		// /dev/termination-log 0666 on the node's disk and does not count
		// it in the pod's ephemeral storage (kubernetes/kubernetes#122224);
		// no field of the pod spec removes it.
		Bound:    []string{"/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/dev/termination-log"},
		Required: []string{"/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/dev/termination-log"},
		// Without a shared PID namespace the pause process is not
		// visible and the image's entrypoint, toolboxd, is pid 1: no init,
		// so the orphan check below fails. With one (shareProcessNamespace),
		// the pause process is pid 1 and reaps orphans, and toolboxd's
		// parent, the shim, is outside the namespace.
		Inits: []string{"toolboxd"},
		// gVisor's own /proc, /sys, /dev and cgroup filesystems.
		GVisor: gvisor,
	}
	// gVisor runs all of a pod's containers in one sandbox kernel with one
	// PID namespace, as shareProcessNamespace does.
	if spn := pod.Spec.ShareProcessNamespace; spn != nil && *spn || gvisor {
		opts.Inits, opts.Roots = []string{"pause"}, []string{"toolboxd"}
	}
	runtimetest.CheckProbe(t, p, opts)

	// The boot file is gone: toolboxd removed it once read.
	var ls bytes.Buffer
	if r, err := tc.Exec(ctx, toolbox.ExecRequest{Args: []string{"ls", "-A", bootDir}}, &ls, &errOut); err != nil || r.ExitCode != 0 || ls.Len() != 0 {
		t.Errorf("ls %s: %+v %v %q; want it empty", bootDir, r, err, ls.String())
	}

	// The API server agrees: the pod has no volume from the node, shares
	// no namespace with the node, and only the init container mounts the
	// Secret.
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir == nil && v.Secret == nil {
			t.Errorf("volume %s is neither an emptyDir nor the sandbox's Secret: %+v", v.Name, v.VolumeSource)
		}
		// The token passes through memory only, never the node's disk.
		if v.Name == "boot" && (v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory) {
			t.Errorf("the boot volume is %+v; want an emptyDir of medium Memory", v.VolumeSource)
		}
	}
	if pod.Spec.HostPID || pod.Spec.HostIPC || pod.Spec.HostNetwork {
		t.Errorf("pod shares the node's namespaces: hostPID %t hostIPC %t hostNetwork %t", pod.Spec.HostPID, pod.Spec.HostIPC, pod.Spec.HostNetwork)
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		for _, m := range c.VolumeMounts {
			if m.Name == "secret" && c.Name != initContainer {
				t.Errorf("container %s mounts the Secret at %s; only the init container may", c.Name, m.MountPath)
			}
		}
	}
}
