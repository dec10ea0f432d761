package e2e_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/drydockhq/drydock"
	k8sruntime "github.com/drydockhq/drydock/runtime/kubernetes"
)

// kubeNodeHarness is a namespace of the test API server whose pods run on
// the real node of DRYDOCK_TEST_KUBE_NODE: a kubelet and containerd that
// start the drydock-sandbox image with its own toolboxd and git, on a CNI
// bridge whose pod addresses this host reaches.
type kubeNodeHarness struct {
	kubeconfig string
	cs         k8sruntime.Client
	ns         string
	node       string
}

// newKubeNodeHarness skips without a real node; otherwise it makes a
// namespace and binds its pods to the node until the test ends. The
// cluster runs no kube-scheduler (it would also bind the pods that the
// host kubelets of other tests run), so the test plays it.
func newKubeNodeHarness(t *testing.T) *kubeNodeHarness {
	t.Helper()
	requireKubeconfig(t)
	node := os.Getenv("DRYDOCK_TEST_KUBE_NODE")
	if node == "" {
		t.Skip("DRYDOCK_TEST_KUBE_NODE not set: no real Kubernetes node (start one with DRYDOCK_KUBE_NODE=1 scripts/testenv/kube-up.sh)")
	}
	kubeconfig, _, cs, ns := newKubeNamespace(t)
	if _, err := cs.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{}); err != nil {
		t.Fatalf("node %s: %v", node, err)
	}
	k := &kubeNodeHarness{kubeconfig: kubeconfig, cs: cs, ns: ns, node: node}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); k.bindPods(ctx, t) }()
	t.Cleanup(func() { cancel(); <-done })
	return k
}

// bindPods binds every unbound pod of the namespace to the node through
// the pods/binding subresource, as a scheduler does: it lists, then
// watches from the list's version, and lists again whenever the API
// server ends the watch (it does every few seconds on the test cluster).
func (k *kubeNodeHarness) bindPods(ctx context.Context, t *testing.T) {
	pods := k.cs.CoreV1().Pods(k.ns)
	bind := func(p *corev1.Pod) {
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
			return
		}
		err := pods.Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: k.node},
		}, metav1.CreateOptions{})
		// A conflict is a pod bound already; not found, one deleted since.
		if err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			t.Logf("bind pod %s to %s: %v", p.Name, k.node, err)
		}
	}
	for ctx.Err() == nil {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for i := range list.Items {
			bind(&list.Items[i])
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			continue
		}
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				bind(p)
			}
		}
		w.Stop()
	}
}

// server prepares a fake-agent server whose sandboxes are pods on the
// node, from the image loaded there (never pulled), with limits the
// shared node fits several of.
func (k *kubeNodeHarness) server(t *testing.T) *server {
	t.Helper()
	image := os.Getenv("DRYDOCK_TEST_IMAGE_HEADLESS")
	if image == "" {
		image = "drydock-sandbox:headless"
	}
	s := newServer(t)
	for i, arg := range s.args {
		if arg == "local" && s.args[i-1] == "--runtime" {
			s.args[i] = "kubernetes"
		}
	}
	s.args = append(s.args, "--kubeconfig", k.kubeconfig, "--kube-namespace", k.ns, "--kube-image-pull-policy", "Never",
		"--image-headless", image, "--sandbox-cpus", "0.5", "--sandbox-memory-mib", "1024", "--sandbox-disk-mib", "256")
	return s
}

// jobPod returns the job's pod once it is running.
func (k *kubeNodeHarness) jobPod(t *testing.T, s *server, id string) *corev1.Pod {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		pods, err := k.cs.CoreV1().Pods(k.ns).List(t.Context(), metav1.ListOptions{LabelSelector: drydock.LabelJob + "=" + id})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 1 && pods.Items[0].Status.Phase == corev1.PodRunning {
			return &pods.Items[0]
		}
		if j := s.status(id); j.Status.Terminal() || time.Now().After(deadline) {
			t.Fatalf("job %s has no running pod: %s %q (pods: %d)", id, j.Status, j.Error, len(pods.Items))
		}
	}
}

// A job scheduled with `drydock schedule --workspace DIR` on Kubernetes
// runs in a real pod on a real node: the uploaded files (less what
// .gitignore names) are unpacked before the agent starts and are the
// diff's starting point, so the live diff read from the pod's git holds
// the agent's files and not the uploaded ones; once cancelled, the stored
// diff is the live one, the CLI prints it, the archive holds both the
// upload and the agent's files, and the pod is gone.
func TestKubernetesUploadAndDiffOnARealNode(t *testing.T) {
	t.Parallel()
	k := newKubeNodeHarness(t)
	project := t.TempDir()
	uploaded := map[string]string{
		".gitignore": "node_modules/\n*.log\n", "package.json": `{"name":"todo"}`, "src/App.tsx": "export default function App() {}\n",
		"src/deep/util.ts": "export const x = 1\n",
	}
	ignored := map[string]string{"node_modules/react/index.js": "x", "npm-debug.log": "x"}
	for name, body := range uploaded {
		writeProjectFile(t, project, name, body)
	}
	for name, body := range ignored {
		writeProjectFile(t, project, name, body)
	}
	if err := os.Symlink("src/App.tsx", filepath.Join(project, "entry.tsx")); err != nil {
		t.Fatal(err)
	}
	s := k.server(t)
	s.start()

	out, stderr, err := s.cli("schedule", "--workspace", project, "--json", "extend the app [fake:steps=2] [fake:delay=10ms] [fake:hang]")
	if err != nil {
		t.Fatalf("schedule --workspace: %v\n%s%s", err, out, stderr)
	}
	var created drydock.Job
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.InputSize == 0 {
		t.Fatalf("schedule printed %q (%v); want a job with input_size", out, err)
	}
	id := created.ID
	pod := k.jobPod(t, s, id)
	if pod.Spec.NodeName != k.node || pod.Status.PodIP == "" {
		t.Fatalf("the job's pod %s is on node %q at %q; want the real node %s", pod.Name, pod.Spec.NodeName, pod.Status.PodIP, k.node)
	}
	t.Logf("job %s runs in pod %s on node %s at %s", id, pod.Name, pod.Spec.NodeName, pod.Status.PodIP)

	var live []byte
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		code, body := s.do("GET", "/v1/jobs/"+id+"/diff", "", "")
		if code == 200 && strings.Contains(string(body), "notes/step-002.md") {
			live = body
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no live diff with both steps: %d %s", code, body)
		}
	}
	for _, want := range []string{
		"diff --git a/notes/step-001.md b/notes/step-001.md\nnew file mode 100644\n",
		"+# Step 2\n",
	} {
		if !strings.Contains(string(live), want) {
			t.Errorf("live diff lacks %q:\n%s", want, live)
		}
	}
	// The baseline is taken after seeding: the upload is not a change.
	var shown []string
	for _, name := range append(slices.Sorted(maps.Keys(uploaded)), "entry.tsx") {
		if strings.Contains(string(live), " b/"+name+"\n") {
			shown = append(shown, name)
		}
	}
	if len(shown) > 0 {
		t.Errorf("live diff shows uploaded files as changes (the baseline predates the seeding?): %v\n%s", shown, live)
	}

	if code, body := s.do("POST", "/v1/jobs/"+id+"/cancel", "", ""); code != 202 {
		t.Fatalf("cancel: %d %s", code, body)
	}
	j, seen := s.waitTerminal(id, 2*time.Minute)
	if j.Status != drydock.StatusCancelled || !strings.HasSuffix(j.DownloadURLTar, "/artifact.tar.gz") {
		t.Fatalf("job ended %s (%v): %q, download_url_tar %q", j.Status, seen, j.Error, j.DownloadURLTar)
	}
	if code, stored := s.do("GET", "/v1/jobs/"+id+"/diff", "", ""); code != 200 || string(stored) != string(live) {
		t.Errorf("stored diff (%d) differs from the live one:\n%s\n---\n%s", code, stored, live)
	}
	// The pod's first process is its pause container (one process
	// namespace): the agent's processes are ended and the stored diff's
	// starting point checked there too.
	for _, e := range s.events(id) {
		if strings.Contains(string(e.Data), "without checking its starting point") {
			t.Errorf("the stored diff was not checked: %s", e.Data)
		}
	}
	if out, err := exec.Command(binary, "diff", "--url", s.url(), id).CombinedOutput(); err != nil || string(out) != string(live) {
		t.Errorf("drydock diff: %v; printed:\n%s\nwant the live diff:\n%s", err, out, live)
	}

	code, data := s.do("GET", "/v1/jobs/"+id+"/artifact.tar.gz", "", "")
	if code != 200 {
		t.Fatalf("artifact.tar.gz: %d %s", code, data)
	}
	got := tarGzFiles(t, data)
	for name, body := range uploaded {
		if got[name] != body {
			t.Errorf("archive's %s is %q; want the uploaded %q", name, got[name], body)
		}
	}
	for _, name := range []string{"notes/step-001.md", "notes/step-002.md"} {
		if !strings.Contains(got[name], "Task: extend the app") {
			t.Errorf("archive's %s (the agent's) is %q", name, got[name])
		}
	}
	if links := tarGzLinks(t, data); links["entry.tsx"] != "src/App.tsx" {
		t.Errorf("archive's links %v; want entry.tsx -> src/App.tsx", links)
	}
	for name := range got {
		if strings.HasPrefix(name, "node_modules") || strings.HasSuffix(name, ".log") {
			t.Errorf("archive holds %s, which .gitignore names", name)
		}
	}

	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		_, err := k.cs.CoreV1().Pods(k.ns).Get(t.Context(), pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pod %s outlived its cancelled job: %v", pod.Name, err)
		}
	}
}

func writeProjectFile(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
