package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/drydockhq/drydock"
	k8sruntime "github.com/drydockhq/drydock/runtime/kubernetes"
)

// strict decodes YAML into the scheme's types and refuses unknown and
// duplicate fields, so that a misspelt key fails here and not at apply.
var strict = json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
	json.SerializerOptions{Yaml: true, Strict: true})

type manifest struct {
	file string
	obj  runtime.Object
}

// decodeFile reads every document of a YAML file.
func decodeFile(t *testing.T, path string) []manifest {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return decodeStream(t, path, data)
}

func decodeStream(t *testing.T, name string, data []byte) []manifest {
	t.Helper()
	var out []manifest
	r := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", name, i, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, gvk, err := strict.Decode(doc, nil, nil)
		if err != nil {
			t.Errorf("%s: document %d is not a valid Kubernetes object: %v", name, i, err)
			continue
		}
		if gvk.Version == "" || gvk.Kind == "" {
			t.Errorf("%s: document %d has no apiVersion or kind", name, i)
		}
		out = append(out, manifest{file: name, obj: obj})
	}
	return out
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.Bytes()
}

// manifests decodes every YAML file under kubernetes/ but the
// kustomizations.
func manifests(t *testing.T) []manifest {
	t.Helper()
	var out []manifest
	err := filepath.WalkDir("kubernetes", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") || d.Name() == "kustomization.yaml" {
			return err
		}
		out = append(out, decodeFile(t, path)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no manifests found")
	}
	return out
}

func objectsOf[T runtime.Object](ms []manifest) []T {
	var out []T
	for _, m := range ms {
		if o, ok := m.obj.(T); ok {
			out = append(out, o)
		}
	}
	return out
}

func one[T runtime.Object](t *testing.T, ms []manifest, name string) T {
	t.Helper()
	for _, o := range objectsOf[T](ms) {
		if any(o).(metav1.Object).GetName() == name {
			return o
		}
	}
	var zero T
	t.Fatalf("no %T named %s", zero, name)
	return zero
}

// Every manifest decodes into a known type; namespaced objects name their
// namespace (the kustomization sets none, as the objects live in two).
func TestManifestsDecode(t *testing.T) {
	t.Parallel()
	ms := manifests(t)
	clusterScoped := map[string]bool{"Namespace": true, "RuntimeClass": true, "ClusterRole": true, "ClusterRoleBinding": true}
	namespaces := map[string]bool{}
	for _, ns := range objectsOf[*corev1.Namespace](ms) {
		namespaces[ns.Name] = true
	}
	for _, m := range ms {
		meta := m.obj.(metav1.Object)
		kind := m.obj.GetObjectKind().GroupVersionKind().Kind
		switch {
		case kind == "ClusterRole" || kind == "ClusterRoleBinding":
			t.Errorf("%s: %s %s: the orchestrator needs nothing at cluster scope", m.file, kind, meta.GetName())
		case clusterScoped[kind] && meta.GetNamespace() != "":
			t.Errorf("%s: cluster-scoped %s %s has namespace %q", m.file, kind, meta.GetName(), meta.GetNamespace())
		case !clusterScoped[kind] && !namespaces[meta.GetNamespace()]:
			t.Errorf("%s: %s %s is in namespace %q, which the manifests do not create", m.file, kind, meta.GetName(), meta.GetNamespace())
		}
	}
	t.Logf("%d objects decoded", len(ms))
}

// The kustomizations build, produce exactly the objects of the files they
// list, and every manifest file is in one of them but the Secret example.
func TestKustomizationsBuild(t *testing.T) {
	t.Parallel()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	listed := map[string]bool{}
	for _, dir := range []string{"kubernetes", "kubernetes/runtimeclasses"} {
		res, err := k.Run(filesys.MakeFsOnDisk(), dir)
		if err != nil {
			t.Fatalf("kustomize build %s: %v", dir, err)
		}
		out, err := res.AsYaml()
		if err != nil {
			t.Fatal(err)
		}
		built := decodeStream(t, dir+" (built)", out)
		var kz struct {
			Resources []string `json:"resources"`
		}
		data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := sigsyaml.Unmarshal(data, &kz); err != nil {
			t.Fatal(err)
		}
		var want []manifest
		for _, r := range kz.Resources {
			listed[filepath.Join(dir, r)] = true
			want = append(want, decodeFile(t, filepath.Join(dir, r))...)
		}
		if diff := cmp.Diff(keys(want), keys(built)); diff != "" {
			t.Errorf("kustomize build %s (-listed files +built):\n%s", dir, diff)
		}
		for _, d := range objectsOf[*appsv1.Deployment](built) {
			if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.example.com/drydock/drydock:dev" {
				t.Errorf("built Deployment image %q: the kustomization's images entry did not apply", img)
			}
		}
	}
	err := filepath.WalkDir("kubernetes", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		if d.Name() != "kustomization.yaml" && d.Name() != "secret.example.yaml" && !listed[path] {
			t.Errorf("%s is in no kustomization", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func keys(ms []manifest) []string {
	var out []string
	for _, m := range ms {
		meta := m.obj.(metav1.Object)
		out = append(out, m.obj.GetObjectKind().GroupVersionKind().Kind+" "+meta.GetNamespace()+"/"+meta.GetName())
	}
	sort.Strings(out)
	return out
}

// The Role grants exactly what the runtime calls (runtime/kubernetes checks
// its calls against PolicyRules), in the sandbox namespace, to the
// Deployment's service account.
func TestRBACMatchesRuntime(t *testing.T) {
	t.Parallel()
	ms := manifests(t)
	roles := objectsOf[*rbacv1.Role](ms)
	if len(roles) != 1 {
		t.Fatalf("%d Roles, want 1", len(roles))
	}
	role := roles[0]
	if diff := cmp.Diff(normalize(k8sruntime.PolicyRules()), normalize(role.Rules)); diff != "" {
		t.Errorf("Role %s against runtime/kubernetes.PolicyRules (-runtime +role):\n%s", role.Name, diff)
	}
	dep := one[*appsv1.Deployment](t, ms, "drydock")
	sandboxNS := envValue(t, dep, "DRYDOCK_KUBE_NAMESPACE")
	if role.Namespace != sandboxNS {
		t.Errorf("Role in %s, sandboxes in %s", role.Namespace, sandboxNS)
	}
	bindings := objectsOf[*rbacv1.RoleBinding](ms)
	if len(bindings) != 1 {
		t.Fatalf("%d RoleBindings, want 1", len(bindings))
	}
	b := bindings[0]
	want := rbacv1.RoleBinding{
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: dep.Spec.Template.Spec.ServiceAccountName, Namespace: dep.Namespace}},
	}
	if b.Namespace != role.Namespace || !cmp.Equal(want.RoleRef, b.RoleRef) || !cmp.Equal(want.Subjects, b.Subjects) {
		t.Errorf("RoleBinding %s/%s binds %+v to %+v, want %+v to %+v in %s", b.Namespace, b.Name, b.RoleRef, b.Subjects, want.RoleRef, want.Subjects, role.Namespace)
	}
	sa := one[*corev1.ServiceAccount](t, ms, dep.Spec.Template.Spec.ServiceAccountName)
	if sa.Namespace != dep.Namespace {
		t.Errorf("ServiceAccount in %s, Deployment in %s", sa.Namespace, dep.Namespace)
	}
}

// normalize expands rules into sorted "group resource verb" triples, so
// that two ways of writing the same permissions compare equal.
func normalize(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, g+" "+res+" "+v)
				}
			}
		}
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			out = append(out, "resourceNames or nonResourceURLs: "+strings.Join(append(r.ResourceNames, r.NonResourceURLs...), ","))
		}
	}
	slices.Sort(out)
	return out
}

func envValue(t *testing.T, d *appsv1.Deployment, name string) string {
	t.Helper()
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	t.Fatalf("Deployment %s sets no %s", d.Name, name)
	return ""
}

func TestDeployment(t *testing.T) {
	t.Parallel()
	ms := manifests(t)
	d := one[*appsv1.Deployment](t, ms, "drydock")
	spec := d.Spec.Template.Spec
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", d.Spec.Replicas)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	for _, arg := range []string{"server", "--runtime=kubernetes", "--listen=0.0.0.0:8080"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %v lack %s", c.Args, arg)
		}
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	for _, name := range []string{"DRYDOCK_STORE", "DRYDOCK_ARTIFACTS"} {
		if ref := env[name].ValueFrom; ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Optional != nil {
			t.Errorf("%s is not read from a required Secret key: %+v", name, env[name])
		}
	}
	if ref := env["POD_NAMESPACE"].ValueFrom; ref == nil || ref.FieldRef == nil || ref.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("POD_NAMESPACE does not come from the pod's namespace: %+v", env["POD_NAMESPACE"])
	}
	if ref := env["DRYDOCK_NODE_ID"].ValueFrom; ref == nil || ref.FieldRef == nil || ref.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("DRYDOCK_NODE_ID is not the pod's name: %+v", env["DRYDOCK_NODE_ID"])
	}
	probes := map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe}
	for path, p := range probes {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "http" {
			t.Errorf("probe for %s: %+v", path, p)
		}
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if len(c.Ports) != 2 || ports["http"] != 8080 || ports["egress"] != 3129 {
		t.Errorf("ports %+v, want http on 8080 and egress on 3129", c.Ports)
	}
	// The pods dial the gateway Service's port and their policies open the
	// orchestrator pods' port: the two must be the same, and the gateway
	// must listen on it.
	gw := one[*corev1.Service](t, ms, "drydock-egress")
	if want := "drydock-egress." + d.Namespace + ".svc:" + strconv.Itoa(int(ports["egress"])); envValue(t, d, "DRYDOCK_KUBE_EGRESS_GATEWAY") != want {
		t.Errorf("DRYDOCK_KUBE_EGRESS_GATEWAY = %q, want %q", envValue(t, d, "DRYDOCK_KUBE_EGRESS_GATEWAY"), want)
	}
	if !strings.HasSuffix(envValue(t, d, "DRYDOCK_EGRESS_LISTEN"), ":"+strconv.Itoa(int(ports["egress"]))) {
		t.Errorf("DRYDOCK_EGRESS_LISTEN = %q, want the egress port", envValue(t, d, "DRYDOCK_EGRESS_LISTEN"))
	}
	if gw.Namespace != d.Namespace || !matches(gw.Spec.Selector, d.Spec.Template.Labels) || len(gw.Spec.Ports) != 1 ||
		gw.Spec.Ports[0].Port != ports["egress"] || gw.Spec.Ports[0].TargetPort.String() != "egress" {
		t.Errorf("Service drydock-egress: %+v; want the Deployment's pods, port %d to the egress port", gw.Spec, ports["egress"])
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v: want CPU and memory requests and a memory limit", c.Resources)
	}
	// The sandboxes' policies admit exactly the pods with these labels.
	labels := d.Spec.Template.Labels
	for k, v := range k8sruntime.DefaultOrchestratorLabels {
		if labels[k] != v {
			t.Errorf("pod label %s = %q, want %q (runtime/kubernetes.DefaultOrchestratorLabels)", k, labels[k], v)
		}
	}
	if !matches(d.Spec.Selector.MatchLabels, labels) {
		t.Errorf("selector %v does not match the pod labels %v", d.Spec.Selector.MatchLabels, labels)
	}
	svc := one[*corev1.Service](t, ms, "drydock")
	if svc.Namespace != d.Namespace || !matches(svc.Spec.Selector, labels) || svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("Service %s/%s selects %v on %s; want the Deployment's pods on http", svc.Namespace, svc.Name, svc.Spec.Selector, svc.Spec.Ports[0].TargetPort.String())
	}
	// Replicas share the key that signs live-view links.
	var linkKey bool
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/var/lib/drydock/link.key" && m.SubPath == "link.key" && m.ReadOnly {
			linkKey = true
		}
	}
	if !linkKey || !slices.Contains(c.Args, "--data-dir=/var/lib/drydock") {
		t.Errorf("the link key from the Secret is not mounted at the data directory's link.key: %+v", c.VolumeMounts)
	}
	checkRestricted(t, "orchestrator pod template", &d.Spec.Template.ObjectMeta, &d.Spec.Template.Spec)
}

func matches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// checkRestricted runs the Pod Security admission's own checks at the
// restricted level, which both namespaces enforce.
func checkRestricted(t *testing.T, what string, meta *metav1.ObjectMeta, spec *corev1.PodSpec) {
	t.Helper()
	ev, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	res := psapolicy.AggregateCheckResults(ev.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}, meta, spec))
	if !res.Allowed {
		t.Errorf("%s violates the restricted Pod Security Standard: %s", what, res.ForbiddenDetail())
	}
}

func TestNamespacesEnforceRestricted(t *testing.T) {
	t.Parallel()
	for _, ns := range objectsOf[*corev1.Namespace](manifests(t)) {
		if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
			t.Errorf("namespace %s does not enforce the restricted Pod Security Standard", ns.Name)
		}
	}
}

// The sandbox namespace denies everything unless a policy allows it; the
// orchestrator accepts HTTP on its port.
func TestNetworkPolicies(t *testing.T) {
	t.Parallel()
	ms := manifests(t)
	d := one[*appsv1.Deployment](t, ms, "drydock")
	sandboxNS := envValue(t, d, "DRYDOCK_KUBE_NAMESPACE")
	deny := one[*networkingv1.NetworkPolicy](t, ms, "default-deny")
	want := networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Ingress", "Egress"}}
	if deny.Namespace != sandboxNS || !cmp.Equal(want, deny.Spec) {
		t.Errorf("default-deny in %s: %+v; want %+v in %s", deny.Namespace, deny.Spec, want, sandboxNS)
	}
	in := one[*networkingv1.NetworkPolicy](t, ms, "drydock-ingress")
	if in.Namespace != d.Namespace || !matches(in.Spec.PodSelector.MatchLabels, d.Spec.Template.Labels) {
		t.Errorf("drydock-ingress selects %v in %s, want the orchestrator's pods", in.Spec.PodSelector.MatchLabels, in.Namespace)
	}
	if len(in.Spec.Ingress) != 2 || len(in.Spec.Ingress[0].Ports) != 1 || in.Spec.Ingress[0].Ports[0].Port.String() != "http" || len(in.Spec.Ingress[0].From) != 0 {
		t.Fatalf("drydock-ingress rules %+v, want the http port from anywhere, then the gateway", in.Spec.Ingress)
	}
	// The gateway takes connections from the sandbox pods only.
	g := in.Spec.Ingress[1]
	if len(g.Ports) != 1 || g.Ports[0].Port.String() != "egress" || len(g.From) != 1 ||
		g.From[0].NamespaceSelector == nil || g.From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != sandboxNS ||
		g.From[0].PodSelector == nil || g.From[0].PodSelector.MatchLabels[drydock.LabelManaged] != "true" {
		t.Errorf("drydock-ingress gateway rule %+v, want the egress port from the managed pods of %s", g, sandboxNS)
	}
}

func TestRuntimeClasses(t *testing.T) {
	t.Parallel()
	handlers := map[string]string{}
	for _, rc := range objectsOf[*nodev1.RuntimeClass](manifests(t)) {
		handlers[rc.Name] = rc.Handler
		if rc.Scheduling == nil || len(rc.Scheduling.NodeSelector) == 0 {
			t.Errorf("RuntimeClass %s does not keep sandboxes to the nodes that have its handler", rc.Name)
		}
	}
	want := map[string]string{"gvisor": "runsc", "kata-fc": "kata-fc"}
	if diff := cmp.Diff(want, handlers); diff != "" {
		t.Errorf("RuntimeClasses (-want +got):\n%s", diff)
	}
}
