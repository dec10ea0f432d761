package kubernetes

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/runtimetest"
	"github.com/drydockhq/drydock/toolbox"
)

// The tests in apiserver_test.go and apimanifests_test.go run against a
// real Kubernetes API server (etcd, kube-apiserver and
// kube-controller-manager from scripts/testenv/kube-up.sh), with
// apiKubelet playing the node. They check what client-go's fake clientset
// cannot: the server's validation and defaulting of the objects the runtime
// makes, admission (Pod Security, RuntimeClass, ServiceAccount, owner
// references), RBAC, watches, graceful deletion and the garbage collector.
const (
	envKubeconfig        = "DRYDOCK_TEST_KUBECONFIG"
	envKubeconfigRuntime = "DRYDOCK_TEST_KUBECONFIG_RUNTIME"
)

// apiEnv is a real API server and a cluster-admin client of it.
type apiEnv struct {
	cfg   *rest.Config
	admin k8sclient.Interface
}

// requireAPIServer skips the test without DRYDOCK_TEST_KUBECONFIG, and fails
// it when the server named there does not answer.
func requireAPIServer(t *testing.T) *apiEnv {
	t.Helper()
	path := os.Getenv(envKubeconfig)
	if path == "" {
		t.Skipf("%s is not set: start a control plane with scripts/testenv/kube-up.sh and export what it prints", envKubeconfig)
	}
	cfg := loadKubeconfig(t, path)
	admin, err := k8sclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := admin.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		t.Fatalf("the API server of %s=%s is not ready: %v", envKubeconfig, path, err)
	}
	return &apiEnv{cfg: cfg, admin: admin}
}

func loadKubeconfig(t *testing.T, path string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", path, err)
	}
	// The tests start many sandboxes at once; client-go's default of 5
	// requests a second would make them wait on the client, not the server.
	cfg.QPS, cfg.Burst = 200, 400
	return cfg
}

// namespace makes a namespace for one test that enforces the restricted Pod
// Security Standard, as deploy/kubernetes's sandbox namespace does, and
// deletes it (the namespace controller empties it) when the test ends.
func (e *apiEnv) namespace(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	ns := "drydock-test-" + drydock.RandomHex(4)
	_, err := e.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns,
		Labels: map[string]string{
			"pod-security.kubernetes.io/enforce":         "restricted",
			"pod-security.kubernetes.io/enforce-version": "latest",
		},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	})
	e.waitDefaultServiceAccount(t, ns)
	return ns
}

// waitDefaultServiceAccount waits for the service account controller: the
// ServiceAccount admission plugin refuses pods in a namespace whose
// "default" account does not exist yet.
func (e *apiEnv) waitDefaultServiceAccount(t *testing.T, ns string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := e.admin.CoreV1().ServiceAccounts(ns).Get(t.Context(), "default", metav1.GetOptions{})
		if err == nil {
			return
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			t.Fatalf("no default service account in %s (is kube-controller-manager running?): %v", ns, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runtimeFor is a Runtime on the namespace of k, through cfg's identity.
func runtimeFor(t *testing.T, cfg *rest.Config, k *apiKubelet, mod func(*Options)) *Runtime {
	t.Helper()
	return runtimeOn(t, cfg, k.ns, func(o *Options) {
		o.ToolboxPort = k.port
		if mod != nil {
			mod(o)
		}
	})
}

// runtimeOn is a Runtime on ns through cfg's identity, with the tests'
// options, changed by mod.
func runtimeOn(t *testing.T, cfg *rest.Config, ns string, mod func(*Options)) *Runtime {
	t.Helper()
	client, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{
		Client:    client,
		Namespace: ns,
		ServerID:  "test-node:8080", // not a valid label value: stored hashed
		Orchestrator: Peer{
			Namespace: "drydock",
			Labels:    DefaultOrchestratorLabels,
		},
		StartTimeout:  30 * time.Second,
		DeleteTimeout: 30 * time.Second,
		Logger:        slog.New(slog.DiscardHandler),
	}
	mod(&opts)
	rt, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// apiSetup is what most tests need: a real API server, a namespace of
// their own, a kubelet for it and a Runtime on it as cluster-admin.
type apiSetup struct {
	env *apiEnv
	ns  string
	k   *apiKubelet
	rt  *Runtime
}

func setupAPI(t *testing.T, nodeLabels map[string]string, mod func(*Options)) apiSetup {
	t.Helper()
	env := requireAPIServer(t)
	ns := env.namespace(t)
	k := newAPIKubelet(t, env.admin, ns, nodeLabels)
	return apiSetup{env: env, ns: ns, k: k, rt: runtimeFor(t, env.cfg, k, mod)}
}

// create makes a sandbox that is destroyed when the test ends.
func (s apiSetup) create(t *testing.T, spec drydock.SandboxSpec) *drydock.Sandbox {
	t.Helper()
	sb, err := s.rt.Create(t.Context(), spec)
	if err != nil {
		t.Fatalf("Create %s: %v", spec.JobID, err)
	}
	t.Cleanup(func() {
		if err := s.rt.Destroy(context.WithoutCancel(t.Context()), sb.ID); err != nil {
			t.Errorf("Destroy %s: %v", sb.ID, err)
		}
	})
	return sb
}

// assertNamespaceEmpty checks that no pod, Secret or NetworkPolicy of the
// runtime's is left in ns.
func (e *apiEnv) assertNamespaceEmpty(t *testing.T, ns string) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	sel := metav1.ListOptions{LabelSelector: drydock.LabelManaged + "=true"}
	pods, err := e.admin.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := e.admin.CoreV1().Secrets(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	policies, err := e.admin.NetworkingV1().NetworkPolicies(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(pods.Items) + len(secrets.Items) + len(policies.Items); n != 0 {
		t.Errorf("left behind in %s: %d pods, %d secrets, %d network policies", ns, len(pods.Items), len(secrets.Items), len(policies.Items))
	}
}

func TestAPIServerConformance(t *testing.T) {
	t.Parallel()
	env := requireAPIServer(t)
	ns := env.namespace(t)
	k := newAPIKubelet(t, env.admin, ns, nil)
	t.Cleanup(func() { env.assertNamespaceEmpty(t, ns) })
	runtimetest.Run(t, func(t *testing.T) drydock.Runtime { return runtimeFor(t, env.cfg, k, nil) }, runtimetest.Options{
		Image:        "drydock-sandbox:headless",
		ReadyTimeout: 10 * time.Second,
		FailingSpec: func(s drydock.SandboxSpec) drydock.SandboxSpec {
			s.Image = invalidRegistry + "no-such-image:1"
			return s
		},
	})
}

// What the API server stored is what the runtime meant: its defaulting and
// admission changed nothing that matters, and it took every object.
func TestAPIServerStoredObjects(t *testing.T) {
	t.Parallel()
	s := setupAPI(t, nil, nil)
	ctx := t.Context()
	sb := s.create(t, drydock.SandboxSpec{
		JobID:     "job-stored",
		Profile:   drydock.ProfileDesktop,
		Resources: drydock.Resources{CPUs: 1.5, MemoryBytes: 3 << 30},
		Env:       map[string]string{"LANG": "C.UTF-8", "TOOLBOXD_LISTEN": "tcp://0.0.0.0:1"},
	})

	pod, err := s.env.admin.CoreV1().Pods(s.ns).Get(ctx, sb.ID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The server computes the QoS class from requests and limits: equal
	// ones make the sandbox the last to be evicted under memory pressure.
	if pod.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("QoS class %q, want Guaranteed (requests equal to limits)", pod.Status.QOSClass)
	}
	ctr := pod.Spec.Containers[0]
	if got := ctr.Resources.Limits[corev1.ResourceCPU]; got.Cmp(resource.MustParse("1500m")) != 0 {
		t.Errorf("cpu limit %s, want 1500m", got.String())
	}
	if got := ctr.Resources.Limits[corev1.ResourceMemory]; got.Cmp(*resource.NewQuantity(3<<30, resource.BinarySI)) != 0 {
		t.Errorf("memory limit %s, want 3Gi", got.String())
	}
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		sc := c.SecurityContext
		if sc == nil || sc.Privileged == nil || *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
			sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 {
			t.Errorf("container %s: stored security context %+v is not the locked-down one", c.Name, sc)
		}
	}
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		t.Error("the stored pod mounts a service account token")
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected != nil {
			t.Errorf("the server added projected volume %s (a service account token?)", v.Name)
		}
	}

	// The stand-in toolboxd got its token from the file the init container
	// copied, removed it, and the pod's environment holds no secret.
	run := s.k.running(pod.UID)
	if run == nil {
		t.Fatal("the test kubelet is not running the pod")
	}
	if run.secrets.Token != sb.Token || run.secrets.VNCPassword != sb.VNCPassword || sb.VNCPassword == "" {
		t.Error("toolboxd's boot secrets differ from the sandbox's token and VNC password")
	}
	if run.bootLeft {
		t.Error("the secrets file outlived toolboxd's start")
	}
	for name, v := range run.env {
		if v == sb.Token || v == sb.VNCPassword {
			t.Errorf("environment variable %s holds a secret", name)
		}
	}
	if run.env["LANG"] != "C.UTF-8" || run.env["TOOLBOXD_LISTEN"] != "tcp://0.0.0.0:"+strconv.Itoa(int(s.k.port)) {
		t.Errorf("environment LANG=%q TOOLBOXD_LISTEN=%q: the job's own variable must pass and its TOOLBOXD_ one must not", run.env["LANG"], run.env["TOOLBOXD_LISTEN"])
	}

	// The endpoint reaches toolboxd with the token, and TOOLBOXD_WORKSPACE
	// is the workspace volume.
	tb := toolbox.New(sb.Endpoint, sb.Token)
	defer tb.Close()
	if err := tb.WriteFile(ctx, "hello.txt", []byte("hi")); err != nil {
		t.Fatalf("toolboxd at the sandbox's endpoint: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(run.workspace, "hello.txt")); err != nil || string(data) != "hi" {
		t.Errorf("file written through toolboxd: %q, %v; want it on the workspace volume", data, err)
	}

	// The Secret and the policy belong to the pod, so the garbage
	// collector takes them with it (OwnerReferencesPermissionEnforcement
	// let the runtime set that).
	sec, err := s.env.admin.CoreV1().Secrets(s.ns).Get(ctx, sb.ID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := s.env.admin.NetworkingV1().NetworkPolicies(s.ns).Get(ctx, sb.ID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for what, refs := range map[string][]metav1.OwnerReference{"secret": sec.OwnerReferences, "network policy": pol.OwnerReferences} {
		if len(refs) != 1 || refs[0].UID != pod.UID || refs[0].Kind != "Pod" {
			t.Errorf("%s owner references %+v, want the pod (uid %s)", what, refs, pod.UID)
		}
	}
	// Immutable for real: the server refuses a change of its data.
	sec.Data["token"] = []byte("changed")
	if _, err := s.env.admin.CoreV1().Secrets(s.ns).Update(ctx, sec, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("update of the immutable secret's data: %v, want Invalid", err)
	}
	if len(pol.Spec.Egress) != 0 || len(pol.Spec.PolicyTypes) != 2 {
		t.Errorf("stored policy: types %v, %d egress rules; want Ingress and Egress with no egress rule", pol.Spec.PolicyTypes, len(pol.Spec.Egress))
	}
}

// A pod the kubelet cannot pull the image of fails Create quickly, with
// the reason: the init container, which comes first and uses the same
// image, is the one in ImagePullBackOff; the main container waits in
// PodInitializing.
func TestAPIServerMissingImage(t *testing.T) {
	t.Parallel()
	s := setupAPI(t, nil, func(o *Options) { o.StartTimeout = 15 * time.Second })
	start := time.Now()
	_, err := s.rt.Create(t.Context(), drydock.SandboxSpec{JobID: "job-missing-image", Image: invalidRegistry + "no-such-image:1"})
	took := time.Since(start)
	if err == nil {
		t.Fatal("Create with a missing image succeeded")
	}
	if code := drydock.ErrorCode(err); code != drydock.EINVALID || !strings.Contains(err.Error(), "ImagePullBackOff") || took > 10*time.Second {
		t.Errorf("Create with a missing image: %v (code %s) after %v; want %s naming ImagePullBackOff as soon as the kubelet reports it, not at the start timeout",
			err, code, took.Round(time.Millisecond), drydock.EINVALID)
	}
	s.env.assertNamespaceEmpty(t, s.ns)
}

// A RuntimeClass the cluster lacks is refused by admission, which Create
// reports as invalid (a retry cannot help) and cleans up after.
func TestAPIServerMissingRuntimeClass(t *testing.T) {
	t.Parallel()
	s := setupAPI(t, nil, func(o *Options) { o.RuntimeClassName = "no-such-class-" + drydock.RandomHex(3) })
	_, err := s.rt.Create(t.Context(), drydock.SandboxSpec{JobID: "job-no-class"})
	if code := drydock.ErrorCode(err); code != drydock.EINVALID || !strings.Contains(err.Error(), "not found") {
		t.Errorf("Create with a missing RuntimeClass: %v (code %s), want %s saying it was not found", err, code, drydock.EINVALID)
	}
	s.env.assertNamespaceEmpty(t, s.ns)
}

// A RuntimeClass's admission adds its overhead and node selector to the
// pod: a sandbox runs only on a node labelled for the handler, and waits
// (then fails, unavailable) where no node is.
func TestAPIServerRuntimeClass(t *testing.T) {
	t.Parallel()
	env := requireAPIServer(t)
	ctx := t.Context()
	name := "drydock-test-" + drydock.RandomHex(4)
	label := "runtime.drydock.dev/" + name
	rc, err := env.admin.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Handler:    "runsc",
		Overhead:   &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{label: "true"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.admin.NodeV1().RuntimeClasses().Delete(context.WithoutCancel(ctx), rc.Name, metav1.DeleteOptions{})
	})

	t.Run("NodeWithHandler", func(t *testing.T) {
		t.Parallel()
		s := setupAPI(t, map[string]string{label: "true"}, func(o *Options) { o.RuntimeClassName = name })
		sb := s.create(t, drydock.SandboxSpec{JobID: "job-class"})
		pod, err := env.admin.CoreV1().Pods(s.ns).Get(ctx, sb.ID, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName != name {
			t.Errorf("runtimeClassName %v, want %s", pod.Spec.RuntimeClassName, name)
		}
		if got := pod.Spec.Overhead[corev1.ResourceMemory]; got.Cmp(resource.MustParse("64Mi")) != 0 {
			t.Errorf("pod overhead memory %s, want the class's 64Mi", got.String())
		}
		if pod.Spec.NodeName != s.k.node {
			t.Errorf("pod on node %q, want %s", pod.Spec.NodeName, s.k.node)
		}
	})
	t.Run("NoNodeWithHandler", func(t *testing.T) {
		t.Parallel()
		s := setupAPI(t, nil, func(o *Options) {
			o.RuntimeClassName = name
			o.StartTimeout = 3 * time.Second
		})
		_, err := s.rt.Create(ctx, drydock.SandboxSpec{JobID: "job-class-nowhere"})
		if code := drydock.ErrorCode(err); code != drydock.EUNAVAILABLE || !strings.Contains(err.Error(), "Unschedulable") {
			t.Errorf("Create with no node for the class: %v (code %s), want %s naming Unschedulable", err, code, drydock.EUNAVAILABLE)
		}
		s.env.assertNamespaceEmpty(t, s.ns)
	})
}

// Destroy returns once the kubelet has stopped the pod and the server has
// forgotten it, not when the delete is accepted; meanwhile the sandbox is
// gone for Get and List.
func TestAPIServerDestroyWaitsForTheKubelet(t *testing.T) {
	t.Parallel()
	s := setupAPI(t, nil, nil)
	ctx := t.Context()
	sb := s.create(t, drydock.SandboxSpec{JobID: "job-destroy"})
	const stop = 2 * time.Second
	s.k.stopDelay.Store(int64(stop))

	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- s.rt.Destroy(ctx, sb.ID) }()
	// While the pod terminates it is still stored, marked for deletion.
	deadline := time.Now().Add(stop)
	for marked := false; !marked; {
		pod, err := s.env.admin.CoreV1().Pods(s.ns).Get(ctx, sb.ID, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod gone before its kubelet stopped it: %v", err)
		}
		marked = pod.DeletionTimestamp != nil
		if time.Now().After(deadline) {
			t.Fatal("Destroy did not mark the pod for deletion")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := s.rt.Get(ctx, sb.ID); drydock.ErrorCode(err) != drydock.ENOTFOUND {
		t.Errorf("Get of a terminating sandbox: %v, want %s", err, drydock.ENOTFOUND)
	}
	if list, err := s.rt.List(ctx, map[string]string{drydock.LabelJob: "job-destroy"}); err != nil || len(list) != 0 {
		t.Errorf("List during termination: %d sandboxes, %v; want none", len(list), err)
	}
	if err := runtimetest.Probe(ctx, sb); err != nil {
		t.Errorf("toolboxd stopped before the kubelet's grace: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if took := time.Since(start); took < stop {
		t.Errorf("Destroy returned after %v, before the pod stopped (%v)", took, stop)
	}
	if err := runtimetest.Probe(ctx, sb); err == nil {
		t.Error("toolboxd answers after Destroy returned")
	}
	s.env.assertNamespaceEmpty(t, s.ns)
}

// A pod deleted by anything but Destroy (a node drain, kubectl) takes its
// Secret and NetworkPolicy with it through the garbage collector.
func TestAPIServerGarbageCollectsOrphans(t *testing.T) {
	t.Parallel()
	s := setupAPI(t, nil, nil)
	ctx := t.Context()
	sb := s.create(t, drydock.SandboxSpec{JobID: "job-orphan"})
	if err := s.env.admin.CoreV1().Pods(s.ns).Delete(ctx, sb.ID, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, serr := s.env.admin.CoreV1().Secrets(s.ns).Get(ctx, sb.ID, metav1.GetOptions{})
		_, perr := s.env.admin.NetworkingV1().NetworkPolicies(s.ns).Get(ctx, sb.ID, metav1.GetOptions{})
		if apierrors.IsNotFound(serr) && apierrors.IsNotFound(perr) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("60 s after the pod's deletion: secret %v, network policy %v; want both collected", serr, perr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The cleanup's Destroy finds nothing left and must not fail.
}

// A sandbox that starts slower than the server keeps a watch open (its
// --min-request-timeout, 5 to 10 s under kube-up.sh) is still seen to
// start: Create reopens the watch.
func TestAPIServerSlowStartOutlivesTheWatch(t *testing.T) {
	t.Parallel()
	s := setupAPI(t, nil, func(o *Options) { o.StartTimeout = 40 * time.Second })
	ctx := t.Context()
	// The scheduler leaves the pod unbound for 12 s, longer than any
	// watch lasts.
	s.k.holdScheduling.Store(true)
	go func() {
		time.Sleep(12 * time.Second)
		s.k.holdScheduling.Store(false)
		s.k.resync(ctx, t)
	}()
	start := time.Now()
	sb := s.create(t, drydock.SandboxSpec{JobID: "job-slow"})
	t.Logf("started after %v", time.Since(start).Round(time.Millisecond))
	if err := runtimetest.Probe(ctx, sb); err != nil {
		t.Errorf("toolboxd: %v", err)
	}
}

// Sandboxes made by one runtime are found by another (a restarted
// orchestrator) through label selectors the real server evaluates, also
// for labels whose values Kubernetes refuses and the runtime hashes.
func TestAPIServerRecoversByLabels(t *testing.T) {
	t.Parallel()
	s := setupAPI(t, nil, nil)
	ctx := t.Context()
	long := strings.Repeat("x", 70)
	specs := []drydock.SandboxSpec{
		{JobID: "job-a", Labels: map[string]string{"team": "blue", "ticket": "https://example.com/t/1"}},
		{JobID: "job-b", Labels: map[string]string{"team": "blue", "ticket": long}},
		{JobID: "job-c", Labels: map[string]string{"team": "red"}},
	}
	ids := map[string]string{}
	for _, spec := range specs {
		ids[spec.JobID] = s.create(t, spec).ID
	}
	second := runtimeFor(t, s.env.cfg, s.k, nil)
	for _, tc := range []struct {
		labels map[string]string
		want   []string
	}{
		{map[string]string{"team": "blue"}, []string{"job-a", "job-b"}},
		{map[string]string{"ticket": "https://example.com/t/1"}, []string{"job-a"}},
		{map[string]string{"ticket": long}, []string{"job-b"}},
		{map[string]string{"team": "red", drydock.LabelServer: "test-node:8080"}, []string{"job-c"}},
		{map[string]string{drydock.LabelServer: "test-node:8080"}, []string{"job-a", "job-b", "job-c"}},
		{map[string]string{drydock.LabelServer: "other-node:8080"}, nil},
	} {
		list, err := second.List(ctx, tc.labels)
		if err != nil {
			t.Fatalf("List %v: %v", tc.labels, err)
		}
		var want []string
		for _, j := range tc.want {
			want = append(want, ids[j])
		}
		got := make([]string, 0, len(list))
		for _, sb := range list {
			got = append(got, sb.ID)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("List %v = %v, want %v", tc.labels, got, want)
		}
		for _, sb := range list {
			if sb.Token == "" || sb.Endpoint.Address == "" {
				t.Errorf("listed %s without its token or endpoint", sb.ID)
			}
		}
	}
}
