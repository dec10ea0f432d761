package kubernetes

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"

	"github.com/drydockhq/drydock"
)

var quantities = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// hashedServer is labelValue("test-node:8080"): the node id has a colon,
// which label values may not.
const hashedServer = "sha256-4a692e1641495b8077c115eaa0ed3f2324464f5c58cf30f2"

func ptr[T any](v T) *T { return &v }

// The pod, its Secret and its NetworkPolicy, field by field, as the API
// server stores them.
func TestObjects(t *testing.T) {
	t.Parallel()
	c := newCluster(t, testNS)
	rt := newTestRuntime(t, c, func(o *Options) { o.RuntimeClassName = "gvisor" })
	sb, err := rt.Create(t.Context(), drydock.SandboxSpec{
		JobID:   "0193ffff-0000-7000-8000-000000000001",
		Image:   "drydock-sandbox:desktop",
		Profile: drydock.ProfileDesktop,
		Resources: drydock.Resources{
			CPUs: 1.5, MemoryBytes: 3 << 30, PidsLimit: 512, WorkspaceBytes: 5 << 30, TmpBytes: 512 << 20,
		},
		Env:    map[string]string{"LANG": "C.UTF-8", "TOOLBOXD_LISTEN": "tcp://0.0.0.0:1", "TOOLBOXD_TOKEN": "chosen-by-the-job"},
		Labels: map[string]string{"team": "infra"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Destroy(context.Background(), sb.ID) })
	id := sb.ID

	pod, err := c.cs.CoreV1().Pods(testNS).Get(t.Context(), id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		"drydock.sandbox": id,
		"drydock.managed": "true",
		"drydock.job":     "0193ffff-0000-7000-8000-000000000001",
		"drydock.server":  hashedServer,
		"drydock.profile": "desktop",
		"team":            "infra",
	}
	wantAnnotations := map[string]string{
		"drydock.labels": `{"drydock.job":"0193ffff-0000-7000-8000-000000000001","drydock.managed":"true","drydock.profile":"desktop","drydock.server":"test-node:8080","team":"infra"}`,
	}
	if diff := cmp.Diff(wantLabels, pod.Labels); diff != "" {
		t.Errorf("pod labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantAnnotations, pod.Annotations); diff != "" {
		t.Errorf("pod annotations (-want +got):\n%s", diff)
	}
	port := c.port
	limits := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1500m"),
		// Under gVisor toolboxd enforces the 3 GiB; the container gets
		// 128 MiB for the sentry and a quarter more (TestGVisorPodLimits).
		corev1.ResourceMemory:           resource.MustParse("3968Mi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("5952Mi"), // 5Gi + 512Mi + 256Mi home + 64Mi logs
	}
	runtimeDefault := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	restricted := &corev1.SecurityContext{
		RunAsNonRoot:             ptr(true),
		RunAsUser:                ptr(int64(1000)),
		RunAsGroup:               ptr(int64(1000)),
		Privileged:               ptr(false),
		AllowPrivilegeEscalation: ptr(false),
		ReadOnlyRootFilesystem:   ptr(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           runtimeDefault,
	}
	wantSpec := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		RuntimeClassName:              ptr("gvisor"),
		AutomountServiceAccountToken:  ptr(false),
		EnableServiceLinks:            ptr(false),
		ShareProcessNamespace:         ptr(true),
		Hostname:                      "sandbox",
		TerminationGracePeriodSeconds: ptr(int64(12)),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr(true),
			RunAsUser:      ptr(int64(1000)),
			RunAsGroup:     ptr(int64(1000)),
			FSGroup:        ptr(int64(1000)),
			SeccompProfile: runtimeDefault,
		},
		// The secrets reach toolboxd as a file it removes, never as
		// environment: only the init container mounts the Secret.
		InitContainers: []corev1.Container{{
			Name:            "secrets",
			Image:           "drydock-sandbox:desktop",
			ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         []string{"cp", "/run/toolbox-secret/boot-secrets.json", "/run/toolbox-boot/boot-secrets.json"},
			Resources:       corev1.ResourceRequirements{Requests: limits, Limits: limits},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "secret", MountPath: "/run/toolbox-secret", ReadOnly: true},
				{Name: "boot", MountPath: "/run/toolbox-boot"},
			},
			SecurityContext:          restricted,
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		}},
		Containers: []corev1.Container{{
			Name:            "sandbox",
			Image:           "drydock-sandbox:desktop",
			ImagePullPolicy: corev1.PullIfNotPresent,
			WorkingDir:      "/workspace",
			Ports:           []corev1.ContainerPort{{Name: "toolbox", ContainerPort: port, Protocol: corev1.ProtocolTCP}},
			Env: []corev1.EnvVar{
				{Name: "LANG", Value: "C.UTF-8"},
				{Name: "TOOLBOXD_LISTEN", Value: "tcp://0.0.0.0:" + itoa(port)},
				{Name: "TOOLBOXD_PROFILE", Value: "desktop"},
				{Name: "TOOLBOXD_WORKSPACE", Value: "/workspace"},
				{Name: "TOOLBOXD_SECRETS_FILE", Value: "/run/toolbox-boot/boot-secrets.json"},
				{Name: "TOOLBOXD_MEMORY_LIMIT", Value: "3221225472"},
				{Name: "TOOLBOXD_TASKS_LIMIT", Value: "512"},
			},
			Resources: corev1.ResourceRequirements{Requests: limits, Limits: limits},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "workspace", MountPath: "/workspace"},
				{Name: "tmp", MountPath: "/tmp"},
				{Name: "home", MountPath: "/home/agent"},
				{Name: "boot", MountPath: "/run/toolbox-boot"},
			},
			SecurityContext: &corev1.SecurityContext{
				RunAsNonRoot:             ptr(true),
				RunAsUser:                ptr(int64(1000)),
				RunAsGroup:               ptr(int64(1000)),
				Privileged:               ptr(false),
				AllowPrivilegeEscalation: ptr(false),
				ReadOnlyRootFilesystem:   ptr(true),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile:           runtimeDefault,
			},
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		}},
		Volumes: []corev1.Volume{
			{Name: "workspace", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("5Gi"))}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("512Mi"))}}},
			{Name: "home", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("256Mi"))}}},
			{Name: "boot", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr(resource.MustParse("64Ki"))}}},
			{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: id, DefaultMode: ptr(int32(0o440)),
				Items: []corev1.KeyToPath{{Key: "boot-secrets.json", Path: "boot-secrets.json"}},
			}}},
		},
	}
	if diff := cmp.Diff(wantSpec, pod.Spec, quantities); diff != "" {
		t.Errorf("pod spec (-want +got):\n%s", diff)
	}

	owner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: id, UID: pod.UID, BlockOwnerDeletion: ptr(false)}}
	if pod.UID == "" {
		t.Fatal("the fake API server gave the pod no uid")
	}
	sec, err := c.cs.CoreV1().Secrets(testNS).Get(t.Context(), id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantSecret := corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: testNS, Labels: wantLabels, Annotations: wantAnnotations, OwnerReferences: owner},
		Immutable:  ptr(true),
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{"token": []byte(sb.Token), "vnc-password": []byte(sb.VNCPassword),
			"boot-secrets.json": []byte(`{"token":"` + sb.Token + `","vnc_password":"` + sb.VNCPassword + `"}`)},
	}
	gotSecret := corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: sec.Name, Namespace: sec.Namespace, Labels: sec.Labels, Annotations: sec.Annotations, OwnerReferences: sec.OwnerReferences,
	}, Immutable: sec.Immutable, Type: sec.Type, Data: sec.Data}
	if diff := cmp.Diff(wantSecret, gotSecret); diff != "" {
		t.Errorf("secret (-want +got):\n%s", diff)
	}
	if len(sb.Token) < 40 || len(sb.VNCPassword) != 8 || sb.Token == "chosen-by-the-job" {
		t.Errorf("token of %d characters, VNC password of %d: want a random token of 43 and a password of 8", len(sb.Token), len(sb.VNCPassword))
	}

	np, err := c.cs.NetworkingV1().NetworkPolicies(testNS).Get(t.Context(), id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tcp := corev1.ProtocolTCP
	toolbox := intstr.FromInt32(port)
	wantNP := networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: testNS, Labels: wantLabels, Annotations: wantAnnotations, OwnerReferences: owner},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"drydock.sandbox": id}},
			PolicyTypes: []networkingv1.PolicyType{"Ingress", "Egress"},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{
					PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "drydock"}},
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "drydock"}},
				}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &toolbox}},
			}},
			Egress: nil, // with Egress in PolicyTypes: nothing may leave
		},
	}
	gotNP := networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{
		Name: np.Name, Namespace: np.Namespace, Labels: np.Labels, Annotations: np.Annotations, OwnerReferences: np.OwnerReferences,
	}, Spec: np.Spec}
	if diff := cmp.Diff(wantNP, gotNP); diff != "" {
		t.Errorf("network policy (-want +got):\n%s", diff)
	}

	// Destroy takes all three.
	if err := rt.Destroy(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, c)
}

func itoa(p int32) string { return strconv.Itoa(int(p)) }

// With a gateway, the pod's only way out is the orchestrator's gateway
// port, and toolboxd is told where it is and which sandbox it serves; the
// proxy variables name toolboxd's forwarder whatever the spec says. A
// gateway given by name is resolved by the runtime.
func TestEgressGoesThroughTheGateway(t *testing.T) {
	t.Parallel()
	c := newCluster(t, testNS)
	rt := newTestRuntime(t, c, func(o *Options) {
		o.Orchestrator = Peer{}
		o.EgressGateway = "localhost:3129"
		o.EgressGatewayPort = 8129
	})
	sb, err := rt.Create(t.Context(), drydock.SandboxSpec{
		JobID: "job-1", Egress: []string{"pypi.example.com:443"},
		Env: map[string]string{"HTTPS_PROXY": "http://elsewhere.example:8080", "TOOLBOXD_EGRESS_GATEWAY": "203.0.113.9:1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Destroy(context.Background(), sb.ID) })
	np, err := c.cs.NetworkingV1().NetworkPolicies(testNS).Get(t.Context(), sb.ID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tcp := corev1.ProtocolTCP
	port := func(p int32) *intstr.IntOrString { v := intstr.FromInt32(p); return &v }
	orchestrator := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
		"app.kubernetes.io/name": "drydock", "app.kubernetes.io/component": "orchestrator",
	}}}}
	want := networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"drydock.sandbox": sb.ID}},
		PolicyTypes: []networkingv1.PolicyType{"Ingress", "Egress"},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From:  orchestrator,
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: port(c.port)}},
		}},
		// Only the gateway, on the pods' port; no DNS, no addresses.
		Egress: []networkingv1.NetworkPolicyEgressRule{{
			To:    orchestrator,
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: port(8129)}},
		}},
	}
	if diff := cmp.Diff(want, np.Spec); diff != "" {
		t.Errorf("network policy spec (-want +got):\n%s", diff)
	}
	pod, err := c.cs.CoreV1().Pods(testNS).Get(t.Context(), sb.ID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	gw := env["TOOLBOXD_EGRESS_GATEWAY"]
	if gw != "127.0.0.1:3129" && gw != "[::1]:3129" {
		t.Errorf("TOOLBOXD_EGRESS_GATEWAY=%q, want localhost resolved, port 3129", gw)
	}
	for k, v := range map[string]string{
		"TOOLBOXD_EGRESS_LISTEN": "127.0.0.1:3128", "TOOLBOXD_SANDBOX_ID": sb.ID,
		"HTTPS_PROXY": "http://127.0.0.1:3128", "http_proxy": "http://127.0.0.1:3128", "NO_PROXY": "localhost,127.0.0.1,::1",
	} {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
	if _, ok := env["TOOLBOXD_EGRESS_SOCKET"]; ok {
		t.Error("a pod was given an egress socket")
	}
}

// Without a gateway a pod has no way out, so a job that needs one is told
// what to configure rather than run without it.
func TestEgressWithoutAGatewayIsRefused(t *testing.T) {
	t.Parallel()
	c := newCluster(t, testNS)
	rt := newTestRuntime(t, c, nil)
	_, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "job-1", Egress: []string{"pypi.example.com:443"}})
	if drydock.ErrorCode(err) != drydock.EINVALID || !strings.Contains(err.Error(), "--kube-egress-gateway") {
		t.Fatalf("Create with egress and no gateway: %v", err)
	}
	assertEmpty(t, c)
	for _, bad := range []string{"no-port", "host:0", "host:99999", ":3129", "host:http"} {
		if _, err := New(Options{Client: fake.NewClientset(), EgressGateway: bad}); err == nil {
			t.Errorf("gateway %q accepted", bad)
		}
	}
	if _, err := New(Options{Client: fake.NewClientset(), EgressGateway: "gw:3129", EgressGatewayPort: 70000}); err == nil {
		t.Error("gateway pod port 70000 accepted")
	}
	rt, err = New(Options{Client: fake.NewClientset(), EgressGateway: "no-such-host.invalid:3129"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "job-1"}); drydock.ErrorCode(err) != drydock.EUNAVAILABLE || !strings.Contains(err.Error(), "does not resolve") {
		t.Errorf("Create with a gateway name that does not resolve: %v", err)
	}
}

func TestLabelValue(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"", "true", "job-1", "0193ffff-0000-7000-8000-000000000001", strings.Repeat("a", 63)} {
		if got := labelValue(v); got != v {
			t.Errorf("labelValue(%q) = %q, want it unchanged", v, got)
		}
	}
	seen := map[string]string{}
	for _, v := range []string{"host:8080", "TestA/b", strings.Repeat("a", 64), "-x", "x-", "ünï", "a b"} {
		got := labelValue(v)
		if errs := content.IsLabelValue(got); len(errs) > 0 {
			t.Errorf("labelValue(%q) = %q, invalid: %v", v, got, errs)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("labelValue(%q) = labelValue(%q) = %q", v, prev, got)
		}
		seen[got] = v
	}
}

// Sandbox pods meet the restricted Pod Security Standard, checked by the
// admission plugin's own code, so a namespace that enforces it (as
// deploy/kubernetes's does) admits them.
func TestPodMeetsRestrictedStandard(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{Client: fake.NewClientset(), RuntimeClassName: "kata-fc"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []drydock.Profile{drydock.ProfileHeadless, drydock.ProfileDesktop} {
		spec := drydock.SandboxSpec{JobID: "job-1", Profile: p, Env: map[string]string{"A": "b"}}
		pod := rt.pod("drydock-0123456789abcdef", "img", spec, rt.resources(spec.Resources), rt.domainLabels(spec), "10.0.0.9:3129")
		ev, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
		if err != nil {
			t.Fatal(err)
		}
		res := psapolicy.AggregateCheckResults(ev.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}, &pod.ObjectMeta, &pod.Spec))
		if !res.Allowed {
			t.Errorf("%s sandbox pod violates the restricted standard: %s", p, res.ForbiddenDetail())
		}
	}
}
