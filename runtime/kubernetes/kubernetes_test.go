package kubernetes

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/runtimetest"
)

const testNS = "sandboxes"

func newTestRuntime(t *testing.T, c *cluster, mod func(*Options)) *Runtime {
	t.Helper()
	opts := Options{
		Client:      c.cs,
		Namespace:   c.ns,
		ServerID:    "test-node:8080", // not a valid label value: stored hashed
		ToolboxPort: c.port,
		Orchestrator: Peer{
			Namespace: "drydock",
			Labels:    map[string]string{"app.kubernetes.io/name": "drydock"},
		},
		StartTimeout:  20 * time.Second,
		DeleteTimeout: 20 * time.Second,
		Logger:        slog.New(slog.DiscardHandler),
	}
	if mod != nil {
		mod(&opts)
	}
	rt, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func TestConformance(t *testing.T) {
	t.Parallel()
	c := newCluster(t, testNS)
	// Runs after the parallel subtests: every call the suite made is in.
	t.Cleanup(func() { checkPermissions(t, c) })
	runtimetest.Run(t, func(t *testing.T) drydock.Runtime { return newTestRuntime(t, c, nil) }, runtimetest.Options{
		Image:        "drydock-sandbox:headless",
		ReadyTimeout: 10 * time.Second,
		FailingSpec: func(s drydock.SandboxSpec) drydock.SandboxSpec {
			s.Image = missingImage
			return s
		},
	})
}

// checkPermissions compares the calls the runtime made with PolicyRules, in
// both directions: a missing rule breaks the runtime on a real cluster, a
// rule never used is a permission too many.
func checkPermissions(t *testing.T, c *cluster) {
	used := map[string]bool{}
	for _, a := range c.cs.Actions() {
		if a.GetNamespace() != c.ns {
			t.Errorf("the runtime called %s %s in namespace %q, outside its own", a.GetVerb(), a.GetResource().Resource, a.GetNamespace())
		}
		res := a.GetResource().Resource
		if a.GetSubresource() != "" {
			res += "/" + a.GetSubresource()
		}
		used[a.GetResource().Group+" "+res+" "+a.GetVerb()] = true
	}
	if diff := cmp.Diff(ruleSet(PolicyRules()), used); diff != "" {
		t.Errorf("PolicyRules against the calls made (-rules +calls):\n%s", diff)
	}
}

func ruleSet(rules []rbacv1.PolicyRule) map[string]bool {
	set := map[string]bool{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					set[g+" "+res+" "+v] = true
				}
			}
		}
	}
	return set
}

// A failed create removes the Secret and the NetworkPolicy it made too,
// which List (pods only) cannot see.
func TestFailedCreateRemovesEverything(t *testing.T) {
	t.Parallel()
	c := newCluster(t, testNS)
	rt := newTestRuntime(t, c, nil)
	_, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "job-1", Image: missingImage})
	if code := drydock.ErrorCode(err); code != drydock.EINVALID || !strings.Contains(err.Error(), "ImagePullBackOff") {
		t.Fatalf("Create with a missing image: %v (code %s), want %s naming ImagePullBackOff", err, code, drydock.EINVALID)
	}
	assertEmpty(t, c)
}

func assertEmpty(t *testing.T, c *cluster) {
	t.Helper()
	ctx := t.Context()
	pods, _ := c.cs.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
	secrets, _ := c.cs.CoreV1().Secrets(c.ns).List(ctx, metav1.ListOptions{})
	policies, _ := c.cs.NetworkingV1().NetworkPolicies(c.ns).List(ctx, metav1.ListOptions{})
	if n := len(pods.Items) + len(secrets.Items) + len(policies.Items); n != 0 {
		t.Errorf("left behind: %d pods, %d secrets, %d network policies", len(pods.Items), len(secrets.Items), len(policies.Items))
	}
}

// A create whose context ends while the pod waits to be scheduled gives up
// and cleans up, whatever the caller's context says.
func TestCreateTimesOut(t *testing.T) {
	t.Parallel()
	c := newCluster(t, testNS)
	rt := newTestRuntime(t, c, func(o *Options) {
		o.StartTimeout = 300 * time.Millisecond
		o.Images = map[drydock.Profile]string{drydock.ProfileHeadless: unschedulableImage}
	})
	start := time.Now()
	_, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "job-1"})
	if code := drydock.ErrorCode(err); code != drydock.EUNAVAILABLE || !strings.Contains(err.Error(), "Unschedulable") {
		t.Errorf("Create of a pod that never runs: %v (code %s), want %s saying why", err, code, drydock.EUNAVAILABLE)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Create took %v with a 300ms start timeout", d)
	}
	assertEmpty(t, c)
}

// A second Runtime on another namespace sees none of the first's sandboxes.
func TestNamespacesAreSeparate(t *testing.T) {
	t.Parallel()
	c := newCluster(t, testNS)
	rt := newTestRuntime(t, c, nil)
	sb, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "job-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Destroy(context.Background(), sb.ID) })
	other := newTestRuntime(t, c, func(o *Options) { o.Namespace = "elsewhere" })
	if list, err := other.List(t.Context(), nil); err != nil || len(list) != 0 {
		t.Errorf("List in another namespace = %d sandboxes, %v; want none", len(list), err)
	}
	if _, err := other.Get(t.Context(), sb.ID); drydock.ErrorCode(err) != drydock.ENOTFOUND {
		t.Errorf("Get in another namespace: %v, want %s", err, drydock.ENOTFOUND)
	}
	if err := other.Destroy(t.Context(), sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Get(t.Context(), sb.ID); err != nil {
		t.Errorf("Destroy in another namespace removed the sandbox: %v", err)
	}
}

// Labels Kubernetes refuses (values with ':' or '/', over 63 characters;
// keys with spaces) still come back exactly and still select.
func TestLabelsKubernetesRefuses(t *testing.T) {
	t.Parallel()
	c := newCluster(t, testNS)
	rt := newTestRuntime(t, c, nil)
	long := strings.Repeat("x", 100)
	labels := map[string]string{"case": "TestA/sub test", "long": long, "a key with spaces": "v", "plain": "ok"}
	sb, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "job-1", Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Destroy(context.Background(), sb.ID) })
	other, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "job-2", Labels: map[string]string{"case": "TestA/other", "long": long}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Destroy(context.Background(), other.ID) })

	want := maps.Clone(labels)
	maps.Copy(want, map[string]string{drydock.LabelManaged: "true", drydock.LabelJob: "job-1", drydock.LabelServer: "test-node:8080", labelProfile: "headless"})
	got, err := rt.Get(t.Context(), sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got.Labels); diff != "" {
		t.Errorf("labels after Get (-want +got):\n%s", diff)
	}
	for _, q := range []map[string]string{
		{"case": "TestA/sub test"},
		{"a key with spaces": "v"},
		{drydock.LabelServer: "test-node:8080", "plain": "ok"},
		{"long": long, "case": "TestA/sub test"},
	} {
		list, err := rt.List(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		if ids := idsOf(list); !slices.Equal(ids, []string{sb.ID}) {
			t.Errorf("List(%v) = %v, want [%s]", q, ids, sb.ID)
		}
	}
	if list, _ := rt.List(t.Context(), map[string]string{"long": long}); len(list) != 2 {
		t.Errorf("List by the long label = %v, want both sandboxes", idsOf(list))
	}
	pod, err := c.cs.CoreV1().Pods(c.ns).Get(t.Context(), sb.ID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range pod.Labels {
		if len(v) > 63 || strings.ContainsAny(v, ":/ ") || strings.Contains(k, " ") {
			t.Errorf("pod label %q=%q is not a valid Kubernetes label", k, v)
		}
	}
}

func idsOf(list []*drydock.Sandbox) []string {
	var ids []string
	for _, sb := range list {
		ids = append(ids, sb.ID)
	}
	slices.Sort(ids)
	return ids
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]Options{
		"no client":         {},
		"bad namespace":     {Client: fake.NewClientset(), Namespace: "Not_A_Namespace"},
		"bad runtime class": {Client: fake.NewClientset(), RuntimeClassName: "gVisor!"},
		"bad port":          {Client: fake.NewClientset(), ToolboxPort: 70000},
		"bad peer label":    {Client: fake.NewClientset(), Orchestrator: Peer{Labels: map[string]string{"app": "a b"}}},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

// client-go's full clientset is a Client too.
var _ Client = (*k8sclient.Clientset)(nil)
