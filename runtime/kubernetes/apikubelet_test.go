package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	k8sclient "k8s.io/client-go/kubernetes"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
	"github.com/drydockhq/drydock/toolbox/server"
)

// podIPs hands out pod addresses (127.2.x.y) across every apiKubelet of the
// test binary, so that, as in a cluster, no two pods share one. The fake
// cluster of kubelet_test.go uses 127.1.x.y.
var podIPs atomic.Int32

// apiKubelet is a node's kubelet (and, for its node, the scheduler) that
// works through a real API server, as the real ones do: it binds each new
// pod of its namespace to its Node (pods/binding), "runs" it, reports it
// through the status subresource, and finishes a graceful deletion with a
// delete of grace period zero once the pod has stopped. Running a pod
// means: the pod's volumes become directories (a Secret volume gets the
// Secret's keys, as the kubelet projects them), the init containers' commands
// run on the host with every absolute path argument mapped into those
// directories, and the main container is toolboxd's HTTP server run in the
// test's process (toolbox/server) on the workspace volume, with the token
// from TOOLBOXD_SECRETS_FILE, which it reads and removes as toolboxd does,
// on the pod's address.
//
// Images under registry.invalid/ cannot be pulled: the pod stays Pending
// with the init container in ImagePullBackOff and the main container
// waiting in PodInitializing, which is what a kubelet reports for a pod
// whose init container's image is missing.
type apiKubelet struct {
	cs     k8sclient.Interface
	ns     string
	node   string
	labels map[string]string // the Node's labels, which nodeSelectors must match
	port   int32             // toolboxd's port, the same in every pod
	hold   net.Listener      // keeps port ours on an address no pod gets
	dir    string

	// stopDelay is how long a pod takes to stop after its deletion, as
	// toolboxd's shutdown does; atomic since tests change it mid-run.
	stopDelay atomic.Int64
	// bindOnly makes it a scheduler for a node whose real kubelet runs
	// the pods.
	bindOnly bool
	// holdScheduling leaves new pods unbound, as a busy scheduler does,
	// until resync.
	holdScheduling atomic.Bool

	syncMu sync.Mutex // one sync at a time: the loop's and resync's
	mu     sync.Mutex
	pods   map[types.UID]*podRun
}

type podRun struct {
	ip        string
	srv       *http.Server
	tb        *server.Server
	root      string
	workspace string // the host directory of TOOLBOXD_WORKSPACE
	secrets   toolbox.BootSecrets
	env       map[string]string
	// bootLeft reports whether the secrets file was still on disk after
	// toolboxd took it (it must not be).
	bootLeft bool
}

const invalidRegistry = "registry.invalid/"

// newAPIKubelet registers a Node and starts serving pods of ns; both end
// with the test.
func newAPIKubelet(t *testing.T, cs k8sclient.Interface, ns string, nodeLabels map[string]string) *apiKubelet {
	t.Helper()
	hold, err := net.Listen("tcp", "127.2.255.254:0")
	if err != nil {
		t.Skipf("cannot listen on 127.2.255.254 (the test kubelet gives each pod its own loopback address; Linux has the whole 127/8): %v", err)
	}
	k := &apiKubelet{
		cs:     cs,
		ns:     ns,
		node:   "drydock-test-node-" + drydock.RandomHex(4),
		labels: map[string]string{},
		port:   int32(hold.Addr().(*net.TCPAddr).Port),
		hold:   hold,
		dir:    t.TempDir(),
		pods:   map[types.UID]*podRun{},
	}
	for key, v := range nodeLabels {
		k.labels[key] = v
	}
	k.labels["kubernetes.io/hostname"] = k.node
	k.labels["kubernetes.io/os"] = "linux"
	k.registerNode(t)
	t.Cleanup(func() {
		k.mu.Lock()
		uids := make([]types.UID, 0, len(k.pods))
		for uid := range k.pods {
			uids = append(uids, uid)
		}
		k.mu.Unlock()
		for _, uid := range uids {
			k.stop(uid)
		}
		hold.Close()
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer dcancel()
		if err := cs.CoreV1().Nodes().Delete(dctx, k.node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("test kubelet: delete node %s: %v", k.node, err)
		}
	})
	k.serve(t)
	return k
}

// newAPIScheduler only binds the pods of ns to an existing node, whose
// real kubelet runs them. There is no kube-scheduler: it would also bind
// the pods of the tests whose kubelet is an apiKubelet to that node.
func newAPIScheduler(t *testing.T, cs k8sclient.Interface, ns, node string) {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node %s: %v", node, err)
	}
	k := &apiKubelet{cs: cs, ns: ns, node: node, labels: n.Labels, bindOnly: true}
	k.serve(t)
}

// serve follows the namespace's pods until the test ends.
func (k *apiKubelet) serve(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	synced := make(chan struct{})
	go k.loop(ctx, t, synced, done)
	select {
	case <-synced:
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("test kubelet: no first list of pods in 10 s")
	}
	// Cleanups run last first: callers register theirs (stopping pods,
	// removing the node) before serve, so the loop has stopped by then.
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// loop lists the namespace's pods, then watches them from that list's
// resource version, and lists again whenever the server ends the watch,
// as client-go's reflector does.
func (k *apiKubelet) loop(ctx context.Context, t *testing.T, synced, done chan struct{}) {
	defer close(done)
	pods := k.cs.CoreV1().Pods(k.ns)
	for ctx.Err() == nil {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("test kubelet: list pods: %v", err)
				time.Sleep(time.Second)
			}
			continue
		}
		known := map[types.UID]bool{}
		for i := range list.Items {
			known[list.Items[i].UID] = true
			k.sync(ctx, t, &list.Items[i])
		}
		k.forgetExcept(known)
		if synced != nil {
			close(synced)
			synced = nil
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
		if err != nil {
			continue
		}
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				break // an error: list afresh
			}
			if ev.Type == watch.Deleted {
				k.stop(pod.UID)
				continue
			}
			if ev.Type != watch.Bookmark {
				k.sync(ctx, t, pod)
			}
		}
		w.Stop()
	}
}

// forgetExcept stops the pods a fresh list no longer has (deleted while
// no watch was open).
func (k *apiKubelet) forgetExcept(known map[types.UID]bool) {
	k.mu.Lock()
	var gone []types.UID
	for uid := range k.pods {
		if !known[uid] {
			gone = append(gone, uid)
		}
	}
	k.mu.Unlock()
	for _, uid := range gone {
		k.stop(uid)
	}
}

// registerNode creates the kubelet's Node, Ready, as a kubelet does at start.
func (k *apiKubelet) registerNode(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	node, err := k.cs.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: k.node, Labels: k.labels},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("test kubelet: register node: %v", err)
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("64"),
		corev1.ResourceMemory:           resource.MustParse("256Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
		corev1.ResourcePods:             resource.MustParse("500"),
	}
	node.Status = corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: k.node}},
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "drydock test kubelet",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}},
	}
	if _, err := k.cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("test kubelet: node status: %v", err)
	}
}

func (k *apiKubelet) sync(ctx context.Context, t *testing.T, pod *corev1.Pod) {
	if ctx.Err() != nil {
		return
	}
	pod = pod.DeepCopy()
	k.syncMu.Lock()
	defer k.syncMu.Unlock()
	var err error
	switch {
	case pod.DeletionTimestamp != nil:
		if !k.bindOnly {
			err = k.terminate(ctx, pod)
		}
	case pod.Spec.NodeName == "":
		err = k.schedule(ctx, pod)
	case pod.Spec.NodeName != k.node || k.bindOnly:
	case pod.Status.Phase == corev1.PodPending || pod.Status.Phase == "":
		err = k.run(ctx, pod)
	}
	if err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		t.Errorf("test kubelet: pod %s: %v", pod.Name, err)
	}
}

// schedule binds the pod to this node when the node matches its
// nodeSelector (the RuntimeClass admission plugin merges the class's into
// it), and otherwise marks it unschedulable as the scheduler would.
func (k *apiKubelet) schedule(ctx context.Context, pod *corev1.Pod) error {
	if k.holdScheduling.Load() {
		return nil
	}
	for key, v := range pod.Spec.NodeSelector {
		if k.labels[key] != v {
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodScheduled {
					return nil // said so already
				}
			}
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message:            fmt.Sprintf("0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector (%s=%s).", key, v),
				LastTransitionTime: metav1.Now(),
			})
			_, err := k.cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
			return err
		}
	}
	return k.cs.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: k.node},
	}, metav1.CreateOptions{})
}

// run starts a bound pod once, then reports it.
func (k *apiKubelet) run(ctx context.Context, pod *corev1.Pod) error {
	k.mu.Lock()
	_, started := k.pods[pod.UID]
	k.mu.Unlock()
	if started {
		return nil
	}
	for _, c := range pod.Spec.InitContainers {
		if strings.HasPrefix(c.Image, invalidRegistry) {
			return k.pullBackOff(ctx, pod, c)
		}
	}
	run, failed, err := k.start(pod)
	if err != nil {
		return err
	}
	if failed != nil {
		pod.Status.Phase = corev1.PodFailed
		pod.Status.InitContainerStatuses = []corev1.ContainerStatus{*failed}
		_, err := k.cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	}
	now := metav1.Now()
	ctr := pod.Spec.Containers[0]
	yes := true
	pod.Status.Phase = corev1.PodRunning
	pod.Status.HostIP, pod.Status.HostIPs = "127.0.0.1", []corev1.HostIP{{IP: "127.0.0.1"}}
	pod.Status.PodIP, pod.Status.PodIPs = run.ip, []corev1.PodIP{{IP: run.ip}}
	pod.Status.StartTime = &now
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	pod.Status.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "drydock-test://" + c.Image, ContainerID: "drydock-test://" + string(pod.UID) + "/" + c.Name,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}},
		})
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: ctr.Name, Image: ctr.Image, ImageID: "drydock-test://" + ctr.Image, ContainerID: "drydock-test://" + string(pod.UID) + "/" + ctr.Name,
		Ready: true, Started: &yes,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
	}}
	if _, err := k.cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		k.stop(pod.UID)
		return err
	}
	return nil
}

func (k *apiKubelet) pullBackOff(ctx context.Context, pod *corev1.Pod, init corev1.Container) error {
	for _, cs := range pod.Status.InitContainerStatuses {
		if cs.State.Waiting != nil && cs.State.Waiting.Reason == "ImagePullBackOff" {
			return nil
		}
	}
	pod.Status.Phase = corev1.PodPending
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()},
		{Type: corev1.PodInitialized, Status: corev1.ConditionFalse, Reason: "ContainersNotInitialized",
			Message: "containers with incomplete status: [" + init.Name + "]", LastTransitionTime: metav1.Now()},
	}
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{
		Name: init.Name, Image: init.Image,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ImagePullBackOff", Message: `Back-off pulling image "` + init.Image + `"`,
		}},
	}}
	pod.Status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}},
		})
	}
	_, err := k.cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

// start makes the pod's volumes, runs its init containers and starts the
// stand-in toolboxd. A failed init container is returned as its status,
// with a nil run.
func (k *apiKubelet) start(pod *corev1.Pod) (*podRun, *corev1.ContainerStatus, error) {
	run := &podRun{root: filepath.Join(k.dir, string(pod.UID))}
	vols, err := k.volumes(pod, run.root)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range pod.Spec.InitContainers {
		if msg, code := execIn(c, vols); code != 0 {
			now := metav1.Now()
			os.RemoveAll(run.root)
			return nil, &corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: int32(code), Reason: "Error", Message: msg, StartedAt: now, FinishedAt: now,
			}}}, nil
		}
	}
	ctr := pod.Spec.Containers[0]
	run.env = map[string]string{}
	for _, e := range ctr.Env {
		if e.ValueFrom != nil {
			return nil, nil, fmt.Errorf("env %s: the test kubelet resolves plain values only", e.Name)
		}
		run.env[e.Name] = e.Value
	}
	if f := run.env["TOOLBOXD_SECRETS_FILE"]; f != "" {
		host, err := hostPath(ctr, vols, f)
		if err != nil {
			return nil, nil, err
		}
		data, err := os.ReadFile(host)
		if err != nil {
			return nil, nil, fmt.Errorf("stand-in toolboxd: %w", err)
		}
		if err := os.Remove(host); err != nil {
			return nil, nil, err
		}
		if err := json.Unmarshal(data, &run.secrets); err != nil {
			return nil, nil, fmt.Errorf("stand-in toolboxd: secrets file: %w", err)
		}
		_, err = os.Stat(host)
		run.bootLeft = !errors.Is(err, os.ErrNotExist)
	}
	port, ok := strings.CutPrefix(run.env["TOOLBOXD_LISTEN"], "tcp://0.0.0.0:")
	if !ok || port != fmt.Sprint(k.port) {
		return nil, nil, fmt.Errorf("TOOLBOXD_LISTEN = %q, want tcp://0.0.0.0:%d", run.env["TOOLBOXD_LISTEN"], k.port)
	}
	n := podIPs.Add(1)
	run.ip = fmt.Sprintf("127.2.%d.%d", n/250, n%250+1)
	ln, err := net.Listen("tcp", net.JoinHostPort(run.ip, port))
	if err != nil {
		return nil, nil, err
	}
	// toolboxd's own HTTP server, on the workspace volume, in this process.
	ws, err := hostPath(ctr, vols, run.env["TOOLBOXD_WORKSPACE"])
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	state, err := hostPath(ctr, vols, "/tmp/toolboxd")
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	run.workspace = ws
	run.tb = server.New(server.Config{
		Workspace: ws, StateDir: state, Token: run.secrets.Token,
		Profile: drydock.Profile(run.env["TOOLBOXD_PROFILE"]), Version: "test-kubelet",
	}, nil)
	run.srv = &http.Server{Handler: run.tb, ReadHeaderTimeout: 5 * time.Second}
	go run.srv.Serve(ln)
	k.mu.Lock()
	k.pods[pod.UID] = run
	k.mu.Unlock()
	return run, nil, nil
}

// volumes makes a directory for each of the pod's volumes: emptyDirs empty,
// Secret volumes with the Secret's keys (or the listed items) as files.
func (k *apiKubelet) volumes(pod *corev1.Pod, root string) (map[string]string, error) {
	vols := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		dir := filepath.Join(root, "volumes", v.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		vols[v.Name] = dir
		if v.Secret == nil {
			continue
		}
		sec, err := k.cs.CoreV1().Secrets(pod.Namespace).Get(context.Background(), v.Secret.SecretName, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("secret volume %s: %w", v.Name, err)
		}
		items := v.Secret.Items
		if len(items) == 0 {
			for key := range sec.Data {
				items = append(items, corev1.KeyToPath{Key: key, Path: key})
			}
		}
		for _, it := range items {
			data, ok := sec.Data[it.Key]
			if !ok {
				return nil, fmt.Errorf("secret volume %s: no key %s in secret %s", v.Name, it.Key, sec.Name)
			}
			if err := os.WriteFile(filepath.Join(dir, it.Path), data, 0o440); err != nil {
				return nil, err
			}
		}
	}
	return vols, nil
}

// hostPath maps a path in the container to the volume directory mounted
// there; a path on no volume is on the read-only root and refused.
func hostPath(c corev1.Container, vols map[string]string, p string) (string, error) {
	best := -1
	var host string
	for _, m := range c.VolumeMounts {
		mp := strings.TrimSuffix(m.MountPath, "/")
		if (p == mp || strings.HasPrefix(p, mp+"/")) && len(mp) > best {
			best, host = len(mp), filepath.Join(vols[m.Name], strings.TrimPrefix(p, mp))
		}
	}
	if best < 0 {
		return "", fmt.Errorf("container %s: %s is on no volume (the root file system is read-only)", c.Name, p)
	}
	return host, nil
}

// execIn runs a container's command on the host with its absolute path
// arguments mapped into the volumes, and returns its output and exit code.
func execIn(c corev1.Container, vols map[string]string) (string, int) {
	if len(c.Command) == 0 {
		return "the test kubelet runs containers with a command only", 126
	}
	args := make([]string, len(c.Command))
	for i, a := range c.Command {
		args[i] = a
		if i > 0 && strings.HasPrefix(a, "/") {
			h, err := hostPath(c, vols, a)
			if err != nil {
				return err.Error(), 1
			}
			args[i] = h
		}
	}
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		return string(out), exitErr.ExitCode()
	case err != nil:
		return err.Error(), 127
	}
	return "", 0
}

// terminate stops a pod marked for deletion and removes it, as a kubelet
// does: a delete with grace period zero, for this incarnation only.
func (k *apiKubelet) terminate(ctx context.Context, pod *corev1.Pod) error {
	if pod.Spec.NodeName != k.node {
		return nil
	}
	if d := time.Duration(k.stopDelay.Load()); d > 0 {
		time.Sleep(d)
	}
	k.stop(pod.UID)
	zero := int64(0)
	uid := pod.UID
	return k.cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid},
	})
}

func (k *apiKubelet) stop(uid types.UID) {
	k.mu.Lock()
	run := k.pods[uid]
	delete(k.pods, uid)
	k.mu.Unlock()
	if run != nil {
		run.srv.Close()
		run.tb.Close()
		os.RemoveAll(run.root)
	}
}

// resync goes through every pod of the namespace again, as after
// holdScheduling.
func (k *apiKubelet) resync(ctx context.Context, t *testing.T) {
	pods, err := k.cs.CoreV1().Pods(k.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		if ctx.Err() == nil {
			t.Errorf("test kubelet: list pods: %v", err)
		}
		return
	}
	for i := range pods.Items {
		k.sync(ctx, t, &pods.Items[i])
	}
}

// running is what the kubelet knows of a running pod, or nil.
func (k *apiKubelet) running(uid types.UID) *podRun {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.pods[uid]
}
