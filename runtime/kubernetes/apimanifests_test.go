package kubernetes

import (
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	k8sclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/runtimetest"
)

// The namespaces and the service account of deploy/kubernetes.
const (
	deployNamespace  = "drydock"
	deployAccount    = "drydock"
	deployKustomize  = "../../deploy/kubernetes"
	deployRuntimeCls = "../../deploy/kubernetes/runtimeclasses"
)

// deploy/kubernetes, applied to a real API server as `kubectl apply -k`
// would (kustomize's build, server-side apply), is accepted whole; the
// orchestrator's pod would be admitted in its namespace; and the runtime,
// as the orchestrator's service account with only what rbac.yaml grants,
// passes the conformance suite in the sandbox namespace without one
// request refused, while what it was not granted is refused.
func TestAPIServerDeployManifests(t *testing.T) {
	t.Parallel()
	env := requireAPIServer(t)
	ctx := t.Context()
	for _, dir := range []string{deployKustomize, deployRuntimeCls} {
		env.apply(t, dir)
	}

	// The Deployment's pod, as its ReplicaSet would create it, passes
	// validation and admission (the namespace enforces the restricted Pod
	// Security Standard; the service account must exist). A dry run
	// stores nothing.
	d, err := env.admin.AppsV1().Deployments(deployNamespace).Get(ctx, "drydock", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env.waitDefaultServiceAccount(t, deployNamespace)
	orchestrator := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "drydock-", Namespace: deployNamespace, Labels: d.Spec.Template.Labels},
		Spec:       d.Spec.Template.Spec,
	}
	if _, err := env.admin.CoreV1().Pods(deployNamespace).Create(ctx, orchestrator, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the orchestrator's pod would be refused: %v", err)
	}
	if d.Spec.Template.Labels["app.kubernetes.io/component"] != DefaultOrchestratorLabels["app.kubernetes.io/component"] {
		t.Errorf("the Deployment's pods lack DefaultOrchestratorLabels: %v", d.Spec.Template.Labels)
	}

	env.waitDefaultServiceAccount(t, DefaultNamespace)
	env.removeSandboxes(t, DefaultNamespace)
	identities := map[string]*rest.Config{"service account token": env.serviceAccountConfig(t)}
	if path := os.Getenv(envKubeconfigRuntime); path != "" {
		identities["client certificate of "+envKubeconfigRuntime] = loadKubeconfig(t, path)
	}
	for name, cfg := range identities {
		t.Run("Permissions/"+name, func(t *testing.T) { checkRuntimePermissions(t, cfg) })
	}

	// The suite runs in the one sandbox namespace: not in parallel with
	// itself, but with everything else.
	cfg := env.serviceAccountConfig(t)
	refused := &refusals{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return refusalRecorder{rt, refused} })
	k := newAPIKubelet(t, env.admin, DefaultNamespace, nil)
	t.Run("Conformance", func(t *testing.T) {
		runtimetest.Run(t, func(t *testing.T) drydock.Runtime {
			return runtimeFor(t, cfg, k, func(o *Options) {
				o.Orchestrator = Peer{Namespace: deployNamespace} // the default labels, the Deployment's
			})
		}, runtimetest.Options{
			Image:        "drydock-sandbox:headless",
			ReadyTimeout: 10 * time.Second,
			FailingSpec: func(s drydock.SandboxSpec) drydock.SandboxSpec {
				s.Image = invalidRegistry + "no-such-image:1"
				return s
			},
		})
	})
	refused.mu.Lock()
	if len(refused.requests) != 0 {
		t.Errorf("the API server refused requests of the runtime (rbac.yaml lacks a verb it uses): %v", refused.requests)
	}
	refused.mu.Unlock()
	env.assertNamespaceEmpty(t, DefaultNamespace)
}

// removeSandboxes deletes what an earlier run, stopped halfway, left in
// the shared sandbox namespace, so that this run's checks start clean.
func (e *apiEnv) removeSandboxes(t *testing.T, ns string) {
	t.Helper()
	ctx := t.Context()
	sel := metav1.ListOptions{LabelSelector: drydock.LabelManaged + "=true"}
	now := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &now}
	for what, err := range map[string]error{
		"pods":             e.admin.CoreV1().Pods(ns).DeleteCollection(ctx, del, sel),
		"secrets":          e.admin.CoreV1().Secrets(ns).DeleteCollection(ctx, del, sel),
		"network policies": e.admin.NetworkingV1().NetworkPolicies(ns).DeleteCollection(ctx, del, sel),
	} {
		if err != nil {
			t.Fatalf("remove an earlier run's %s from %s: %v", what, ns, err)
		}
	}
}

// apply builds a kustomization and applies every object server-side, as
// `kubectl apply --server-side -k DIR` does.
func (e *apiEnv) apply(t *testing.T, dir string) {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	dyn, err := dynamic.NewForConfig(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(e.admin.Discovery()))
	ctx := t.Context()
	for _, r := range res.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{Object: m}
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s: %s is not served: %v", dir, gvk, err)
		}
		if obj.GetKind() == "Namespace" {
			e.waitNamespaceNotTerminating(t, obj.GetName())
		}
		var client dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if ns := obj.GetNamespace(); ns != "" {
			client = dyn.Resource(mapping.Resource).Namespace(ns)
		}
		if _, err := client.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "drydock-test", Force: true}); err != nil {
			t.Errorf("%s: apply %s %s/%s: %v", dir, gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
}

// waitNamespaceNotTerminating waits out the deletion of a namespace someone
// deleted, which refuses new objects until the namespace controller is done.
func (e *apiEnv) waitNamespaceNotTerminating(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ns, err := e.admin.CoreV1().Namespaces().Get(t.Context(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && ns.Status.Phase != corev1.NamespaceTerminating) {
			return
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("namespace %s still terminating: %v", name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// serviceAccountConfig is the orchestrator's identity in the cluster: a
// token of deploy/kubernetes's service account, as a pod of the Deployment
// gets it (audience and all), and nothing else of the admin's credentials.
func (e *apiEnv) serviceAccountConfig(t *testing.T) *rest.Config {
	t.Helper()
	expiry := int64(3600)
	tr, err := e.admin.CoreV1().ServiceAccounts(deployNamespace).CreateToken(t.Context(), deployAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for service account %s/%s: %v", deployNamespace, deployAccount, err)
	}
	cfg := rest.AnonymousClientConfig(e.cfg)
	cfg.BearerToken = tr.Status.Token
	return cfg
}

// checkRuntimePermissions asks the authorizer, as the identity in cfg,
// about every verb PolicyRules lists (all allowed in the sandbox namespace,
// none elsewhere) and some it does not (all refused), and makes a few of
// the refused calls for real.
func checkRuntimePermissions(t *testing.T, cfg *rest.Config) {
	cs, err := k8sclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	can := func(attr authorizationv1.ResourceAttributes) bool {
		t.Helper()
		review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attr},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("access review %+v: %v", attr, err)
		}
		return review.Status.Allowed
	}
	granted := map[string]bool{}
	for _, rule := range PolicyRules() {
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				for _, v := range rule.Verbs {
					granted[g+"/"+res+"/"+v] = true
					attr := authorizationv1.ResourceAttributes{Namespace: DefaultNamespace, Group: g, Resource: res, Verb: v}
					if !can(attr) {
						t.Errorf("%s %s (group %q) in %s: refused, but the runtime needs it", v, res, g, DefaultNamespace)
					}
					attr.Namespace = deployNamespace
					if can(attr) {
						t.Errorf("%s %s (group %q) in %s: allowed outside the sandbox namespace", v, res, g, deployNamespace)
					}
				}
			}
		}
	}
	for _, attr := range []authorizationv1.ResourceAttributes{
		{Resource: "pods", Verb: "update"},
		{Resource: "pods", Verb: "patch"},
		{Resource: "pods", Subresource: "exec", Verb: "create"},
		{Resource: "pods", Subresource: "status", Verb: "update"},
		{Resource: "secrets", Verb: "update"},
		{Resource: "secrets", Verb: "watch"},
		{Resource: "configmaps", Verb: "create"},
		{Resource: "serviceaccounts", Subresource: "token", Verb: "create"},
		{Group: "networking.k8s.io", Resource: "networkpolicies", Verb: "list"},
		{Group: "rbac.authorization.k8s.io", Resource: "roles", Verb: "update"},
		{Resource: "namespaces", Verb: "delete", Name: DefaultNamespace},
		{Resource: "nodes", Verb: "list"},
	} {
		if attr.Resource != "namespaces" && attr.Resource != "nodes" {
			attr.Namespace = DefaultNamespace
		}
		if granted[attr.Group+"/"+attr.Resource+"/"+attr.Verb] && attr.Subresource == "" {
			t.Fatalf("test bug: %+v is in PolicyRules", attr)
		}
		if can(attr) {
			t.Errorf("%s %s/%s in %q: allowed, but the runtime has no use for it", attr.Verb, attr.Resource, attr.Subresource, attr.Namespace)
		}
	}
	for what, call := range map[string]func() error{
		"list secrets in " + deployNamespace: func() error {
			_, err := cs.CoreV1().Secrets(deployNamespace).List(ctx, metav1.ListOptions{})
			return err
		},
		"get network policy default-deny": func() error {
			_, err := cs.NetworkingV1().NetworkPolicies(DefaultNamespace).Get(ctx, "default-deny", metav1.GetOptions{})
			return err
		},
		"delete the sandbox namespace": func() error {
			return cs.CoreV1().Namespaces().Delete(ctx, DefaultNamespace, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		},
		"scale the orchestrator": func() error {
			_, err := cs.AppsV1().Deployments(deployNamespace).Patch(ctx, "drydock", types.MergePatchType, []byte(`{"spec":{"replicas":9}}`), metav1.PatchOptions{})
			return err
		},
	} {
		if err := call(); !apierrors.IsForbidden(err) {
			t.Errorf("%s as the runtime: %v, want Forbidden", what, err)
		}
	}
}

// refusalRecorder notes the requests answered 403 Forbidden.
type refusalRecorder struct {
	next http.RoundTripper
	*refusals
}

type refusals struct {
	mu       sync.Mutex
	requests []string
}

func (r refusalRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusForbidden {
		r.mu.Lock()
		r.requests = append(r.requests, req.Method+" "+req.URL.Path)
		r.mu.Unlock()
	}
	return resp, err
}
