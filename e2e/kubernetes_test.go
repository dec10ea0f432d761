package e2e_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"github.com/drydockhq/drydock"
	k8sruntime "github.com/drydockhq/drydock/runtime/kubernetes"
	"github.com/drydockhq/drydock/toolbox"
)

// hostKubelet plays the kubelet for a real API server with no node: it
// runs each pod of its namespace as a toolboxd process on this host, on a
// loopback address of its own (the pod IP), with the pod's environment and
// its Secret's boot file, and reports the pod running through the status
// subresource. What it cannot give is a pod's network namespace, so a
// NetworkPolicy is not enforced here: the test checks the gateway, which
// decides what the allowed path reaches.
type hostKubelet struct {
	t    *testing.T
	cs   k8sruntime.Client
	ns   string
	bin  string
	mu   sync.Mutex
	next int
	pods map[string]*exec.Cmd
	ips  map[string]string
}

func startHostKubelet(t *testing.T, cs k8sruntime.Client, ns, bin string) *hostKubelet {
	k := &hostKubelet{t: t, cs: cs, ns: ns, bin: bin, pods: map[string]*exec.Cmd{}, ips: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); k.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		k.mu.Lock()
		defer k.mu.Unlock()
		for name, cmd := range k.pods {
			cmd.Process.Kill()
			cmd.Wait()
			delete(k.pods, name)
		}
	})
	return k
}

func (k *hostKubelet) run(ctx context.Context) {
	for ctx.Err() == nil {
		w, err := k.cs.CoreV1().Pods(k.ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			switch {
			case ev.Type == watch.Deleted || pod.DeletionTimestamp != nil:
				k.stop(pod.Name)
			case ev.Type == watch.Added && (pod.Status.Phase == "" || pod.Status.Phase == corev1.PodPending) && !k.started(pod.Name):
				if err := k.start(ctx, pod); err != nil {
					k.t.Logf("host kubelet: pod %s: %v", pod.Name, err)
				}
			}
		}
		w.Stop()
	}
}

func (k *hostKubelet) start(ctx context.Context, pod *corev1.Pod) error {
	k.mu.Lock()
	k.next++
	ip := fmt.Sprintf("127.3.%d.%d", k.next/250, 1+k.next%250)
	k.mu.Unlock()
	dir := k.t.TempDir()
	c := pod.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	var port int32
	for _, p := range c.Ports {
		port = p.ContainerPort
	}
	sec, err := k.cs.CoreV1().Secrets(k.ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	boot := filepath.Join(dir, "boot-secrets.json")
	if err := os.WriteFile(boot, sec.Data["boot-secrets.json"], 0o600); err != nil {
		return err
	}
	ws := filepath.Join(dir, "workspace")
	os.Mkdir(ws, 0o755)
	// The pod's own addresses become this pod's loopback address.
	env["TOOLBOXD_LISTEN"] = fmt.Sprintf("tcp://%s:%d", ip, port)
	env["TOOLBOXD_SECRETS_FILE"] = boot
	env["TOOLBOXD_WORKSPACE"] = ws
	env["TOOLBOXD_SERVICES"] = "none"
	if env[toolbox.EnvEgressListen] != "" {
		fwd := ip + ":3128"
		env[toolbox.EnvEgressListen] = fwd
		for name := range toolbox.EgressEnv() {
			if strings.HasSuffix(strings.ToLower(name), "_proxy") && name != "NO_PROXY" && name != "no_proxy" {
				env[name] = "http://" + fwd
			}
		}
	}
	cmd := exec.Command(k.bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for name, v := range env {
		cmd.Env = append(cmd.Env, name+"="+v)
	}
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		return err
	}
	k.mu.Lock()
	k.pods[pod.Name], k.ips[pod.Name] = cmd, ip
	k.mu.Unlock()
	// A scheduler, when the cluster runs one, writes the pod's status
	// too (unschedulable: see hostKubeletClass): retry on a conflict.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := k.cs.CoreV1().Pods(k.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		pod.Status = corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &now,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: c.Name, Image: c.Image, Ready: true, Started: ptrTo(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			}},
		}
		_, err = k.cs.CoreV1().Pods(k.ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
}

func ptrTo[T any](v T) *T { return &v }

func (k *hostKubelet) stop(name string) {
	k.mu.Lock()
	cmd := k.pods[name]
	delete(k.pods, name)
	k.mu.Unlock()
	if cmd != nil {
		cmd.Process.Kill()
		cmd.Wait()
	}
}

func (k *hostKubelet) started(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.pods[name] != nil
}

func (k *hostKubelet) running() map[string]string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.ips)
}

// kubeHarness is a namespace of the test API server whose pods a host
// kubelet runs.
type kubeHarness struct {
	kubeconfig string
	cfg        *rest.Config
	cs         k8sruntime.Client
	ns         string
	kubelet    *hostKubelet
	// class is a RuntimeClass that keeps the pods off every real node.
	class string
}

// newKubeHarness makes a fresh namespace on the API server of
// DRYDOCK_TEST_KUBECONFIG (skipping without one) and starts a host
// kubelet for it.
func newKubeHarness(t *testing.T) *kubeHarness {
	t.Helper()
	requireKubeconfig(t)
	bin := os.Getenv("DRYDOCK_TEST_TOOLBOXD")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "toolboxd")
		if out, err := exec.Command("go", "build", "-o", bin, "../cmd/toolboxd").CombinedOutput(); err != nil {
			t.Fatalf("build toolboxd: %v\n%s", err, out)
		}
	}
	kubeconfig, cfg, cs, ns := newKubeNamespace(t)
	return &kubeHarness{kubeconfig: kubeconfig, cfg: cfg, cs: cs, ns: ns, kubelet: startHostKubelet(t, cs, ns, bin), class: hostKubeletClass(t, cfg, ns)}
}

// requireKubeconfig skips without a test API server.
func requireKubeconfig(t *testing.T) string {
	t.Helper()
	kubeconfig := os.Getenv("DRYDOCK_TEST_KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("DRYDOCK_TEST_KUBECONFIG not set: no Kubernetes API server (make test starts one with scripts/testenv/kube-up.sh)")
	}
	return kubeconfig
}

// newKubeNamespace makes a fresh namespace on the API server of
// DRYDOCK_TEST_KUBECONFIG, deleted when the test ends, and waits until it
// admits pods.
func newKubeNamespace(t *testing.T) (string, *rest.Config, k8sruntime.Client, string) {
	t.Helper()
	kubeconfig := requireKubeconfig(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := k8sruntime.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := "drydock-e2e-" + drydock.RandomHex(4)
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	// Pods are admitted once the namespace's default service account
	// exists, which the controller manager makes just after the namespace.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Get(t.Context(), "default", metav1.GetOptions{}); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("no default service account in %s: %v", ns, err)
		}
	}
	return kubeconfig, cfg, cs, ns
}

// hostKubeletClass makes a RuntimeClass whose node selector no node
// matches: when the API server has a scheduler and a real kubelet, the
// pods that use it stay unscheduled, so that only the host kubelet runs
// them (the RuntimeClass admission plugin, on by default, adds the
// selector to each pod).
func hostKubeletClass(t *testing.T, cfg *rest.Config, ns string) string {
	t.Helper()
	full, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rc := &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-host"},
		Handler:    "host-kubelet",
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"drydock.e2e/host-kubelet": ns}},
	}
	if _, err := full.NodeV1().RuntimeClasses().Create(t.Context(), rc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create RuntimeClass: %v", err)
	}
	t.Cleanup(func() {
		full.NodeV1().RuntimeClasses().Delete(context.Background(), rc.Name, metav1.DeleteOptions{})
	})
	return rc.Name
}

// server prepares a fake-agent server whose sandboxes are the harness's
// pods.
func (k *kubeHarness) server(t *testing.T, extra ...string) *server {
	t.Helper()
	s := newServer(t, extra...)
	for i, arg := range s.args {
		if arg == "local" && s.args[i-1] == "--runtime" {
			s.args[i] = "kubernetes"
		}
	}
	s.args = append(s.args, "--kubeconfig", k.kubeconfig, "--kube-namespace", k.ns, "--kube-runtime-class", k.class)
	return s
}

// jobSandbox waits until the host kubelet runs the job's pod and returns
// the sandbox with its toolboxd's address and token.
func (k *kubeHarness) jobSandbox(t *testing.T, s *server, id string) *drydock.Sandbox {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		pods, err := k.cs.CoreV1().Pods(k.ns).List(t.Context(), metav1.ListOptions{LabelSelector: drydock.LabelJob + "=" + id})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 1 && k.kubelet.running()[pods.Items[0].Name] != "" {
			p := pods.Items[0]
			sec, err := k.cs.CoreV1().Secrets(k.ns).Get(t.Context(), p.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return &drydock.Sandbox{ID: p.Name, Token: string(sec.Data["token"]), Endpoint: drydock.Endpoint{Network: "tcp", Address: k.kubelet.running()[p.Name] + ":7070"}}
		}
		if j := s.status(id); j.Status.Terminal() || time.Now().After(deadline) {
			t.Fatalf("job %s: %s %q", id, j.Status, j.Error)
		}
	}
}

// A job's pod reaches the network only through the orchestrator's egress
// gateway, which applies the job's list by host name, follows changes
// while the job runs, and answers the pod's programs with reasons: the
// real binary against a real API server, with real toolboxd processes.
func TestKubernetesEgressThroughTheGateway(t *testing.T) {
	k := newKubeHarness(t)
	a := loopbackServer(t, "127.0.0.2:0", "a")
	b := loopbackServer(t, "127.0.0.2:0", "b")
	gw := freeAddr(t)
	s := k.server(t, "--egress-private", "127.0.0.2/32", "--egress-listen", gw, "--kube-egress-gateway", gw)
	s.start()

	id := s.schedule(`{"task": "wait [fake:steps=0] [fake:hang]", "timeout": "10m", "egress": ["` + a + `"]}`)
	sb := k.jobSandbox(t, s, id)
	cs, ns := k.cs, k.ns
	tb := toolbox.New(sb.Endpoint, sb.Token)
	// get runs curl in the pod, as the agent's commands run: with the
	// environment the runtime gave the pod.
	get := func(dest string, flags ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		var out bytes.Buffer
		args := append(append([]string{"curl", "-sS", "-m", "15", "-i"}, flags...), "http://"+dest+"/")
		if _, err := tb.Exec(ctx, toolbox.ExecRequest{Args: args}, &out, &out); err != nil {
			t.Fatalf("exec curl: %v", err)
		}
		return out.String()
	}
	deadline := time.Now().Add(time.Minute)
	for out := get(a); !strings.Contains(out, "hello from a"); out = get(a) {
		if time.Now().After(deadline) {
			t.Fatalf("a never became reachable through the gateway: %q", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out := get(b); !strings.Contains(out, "403") || !strings.Contains(out, "not in the job's egress allowlist") {
		t.Errorf("b before it is allowed: %q", out)
	}
	// The API is on this host's 127.0.0.1, which a pod's NO_PROXY lists
	// (its own loopback); through the gateway it is refused.
	proxy := []string{"--noproxy", "", "-x", "http://" + strings.TrimSuffix(sb.Endpoint.Address, ":7070") + ":3128"}
	if out := get(s.addr, proxy...); !strings.Contains(out, "403") {
		t.Errorf("the orchestrator's API through the gateway: %q", out)
	}
	if code, body := s.do("PUT", "/v1/jobs/"+id+"/egress", "", `{"egress": ["`+b+`"]}`); code != 200 {
		t.Fatalf("PUT egress: %d %s", code, body)
	}
	if out := get(b); !strings.Contains(out, "hello from b") {
		t.Errorf("b after it was allowed: %q", out)
	}
	if out := get(a); !strings.Contains(out, "403") {
		t.Errorf("a after it was removed: %q", out)
	}
	var refused bool
	for _, ev := range s.events(id) {
		refused = refused || strings.Contains(string(ev.Data), "egress refused: "+b)
	}
	if !refused {
		t.Error("the gateway's refusal is not among the job's events")
	}
	if code, body := s.do("POST", "/v1/jobs/"+id+"/cancel", "", ""); code != 202 {
		t.Fatalf("cancel: %d %s", code, body)
	}
	if j, _ := s.waitTerminal(id, time.Minute); j.Status != drydock.StatusCancelled {
		t.Errorf("job ended %s: %s", j.Status, j.Error)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		_, err := cs.CoreV1().Pods(ns).Get(t.Context(), sb.ID, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox pod outlived its cancelled job: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A job's secret reaches its pod's processes through toolboxd alone: a
// command, a new shell and Python in the pod see it, while no object of
// the namespace holds it, in its JSON or base64-decoded (the pod's spec
// and its Secret among them), and the job's events hold it masked.
func TestKubernetesJobSecrets(t *testing.T) {
	k := newKubeHarness(t)
	s := k.server(t)
	s.start()
	value := newSecretValue("kube")
	id := scheduleSecretJob(t, s, value, "[fake:steps=1] [fake:delay=0s] [fake:hang]")
	waitObservations(t, s, id, 1, time.Minute)
	sb := k.jobSandbox(t, s, id)
	tb := toolbox.New(sb.Endpoint, sb.Token)
	defer tb.Close()
	probeEnv(t, tb, false, false).check(t, "the job's pod", value, "")

	objs := namespaceObjects(t, k.cfg, k.ns)
	for _, want := range []string{"pods/" + sb.ID, "secrets/" + sb.ID} {
		if _, ok := objs[want]; !ok {
			t.Errorf("%s is not among the namespace's objects; the search below misses it", want)
		}
	}
	for name, obj := range objs {
		if holds(obj, value) {
			t.Errorf("%s holds the job's secret value", name)
		}
	}
	t.Logf("searched %d objects of namespace %s: %v", len(objs), k.ns, slices.Sorted(maps.Keys(objs)))

	if j := endJob(t, s, id); j.Status != drydock.StatusCancelled {
		t.Errorf("job ended %s: %s", j.Status, j.Error)
	}
	eventsMasked(t, s, id, value)
	if strings.Contains(s.logs.String(), value) {
		t.Error("the server's log holds the value")
	}
}

// namespaceObjects lists every object of the namespace, of every kind the
// API server serves that can be listed, as kind/name → the object.
func namespaceObjects(t *testing.T, cfg *rest.Config, ns string) map[string]map[string]any {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = rest.NoWarnings{} // deprecated kinds are listed on purpose
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A group whose discovery fails (an aggregated API with no backend)
	// comes back as an error beside the rest.
	lists, err := dc.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		t.Fatalf("discover the API's resources: %v", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if !slices.Contains(r.Verbs, "list") || strings.Contains(r.Name, "/") {
				continue
			}
			items, err := dyn.Resource(gv.WithResource(r.Name)).Namespace(ns).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Errorf("list %s in %s: %v", r.Name, ns, err)
				continue
			}
			for _, it := range items.Items {
				out[r.Name+"/"+it.GetName()] = it.Object
			}
		}
	}
	return out
}

// holds reports whether v is in any string of obj, as it is or
// base64-decoded (a Secret's data, or any other encoded field).
func holds(obj any, v string) bool {
	switch o := obj.(type) {
	case string:
		if strings.Contains(o, v) {
			return true
		}
		dec, err := base64.StdEncoding.DecodeString(o)
		return err == nil && bytes.Contains(dec, []byte(v))
	case map[string]any:
		for key, x := range o {
			if holds(key, v) || holds(x, v) {
				return true
			}
		}
	case []any:
		for _, x := range o {
			if holds(x, v) {
				return true
			}
		}
	}
	return false
}
