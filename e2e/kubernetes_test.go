package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"

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
	pod = pod.DeepCopy()
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

// A job's pod reaches the network only through the orchestrator's egress
// gateway, which applies the job's list by host name, follows changes
// while the job runs, and answers the pod's programs with reasons: the
// real binary against a real API server, with real toolboxd processes.
func TestKubernetesEgressThroughTheGateway(t *testing.T) {
	kubeconfig := os.Getenv("DRYDOCK_TEST_KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("DRYDOCK_TEST_KUBECONFIG not set: no Kubernetes API server (make test starts one with scripts/testenv/kube-up.sh)")
	}
	bin := os.Getenv("DRYDOCK_TEST_TOOLBOXD")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "toolboxd")
		if out, err := exec.Command("go", "build", "-o", bin, "../cmd/toolboxd").CombinedOutput(); err != nil {
			t.Fatalf("build toolboxd: %v\n%s", err, out)
		}
	}
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
	kubelet := startHostKubelet(t, cs, ns, bin)

	a := loopbackServer(t, "127.0.0.2:0", "a")
	b := loopbackServer(t, "127.0.0.2:0", "b")
	gw := freeAddr(t)
	s := newServer(t, "--egress-private", "127.0.0.2/32", "--egress-listen", gw)
	for i, arg := range s.args {
		if arg == "local" && s.args[i-1] == "--runtime" {
			s.args[i] = "kubernetes"
		}
	}
	s.args = append(s.args, "--kubeconfig", kubeconfig, "--kube-namespace", ns, "--kube-egress-gateway", gw)
	s.start()

	id := s.schedule(`{"task": "wait [fake:steps=0] [fake:hang]", "timeout": "10m", "egress": ["` + a + `"]}`)
	var sb *drydock.Sandbox
	deadline := time.Now().Add(time.Minute)
	for sb == nil {
		pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: drydock.LabelJob + "=" + id})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 1 && kubelet.running()[pods.Items[0].Name] != "" {
			p := pods.Items[0]
			sec, err := cs.CoreV1().Secrets(ns).Get(t.Context(), p.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sb = &drydock.Sandbox{ID: p.Name, Token: string(sec.Data["token"]), Endpoint: drydock.Endpoint{Network: "tcp", Address: kubelet.running()[p.Name] + ":7070"}}
		} else if j := s.status(id); j.Status.Terminal() || time.Now().After(deadline) {
			t.Fatalf("job %s: %s %q", id, j.Status, j.Error)
		}
		time.Sleep(100 * time.Millisecond)
	}
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
	deadline = time.Now().Add(time.Minute)
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
