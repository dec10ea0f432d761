package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// Names inside every object this runtime makes.
const (
	// labelSandbox selects one sandbox's pod; its NetworkPolicy uses it.
	labelSandbox = "drydock.sandbox"
	labelProfile = "drydock.profile"
	// annotationLabels holds the sandbox's labels exactly as given, as JSON:
	// Kubernetes label values are limited (63 characters, a small alphabet),
	// so a label is only a search key and this is the record.
	annotationLabels = "drydock.labels"

	containerName = "sandbox"
	portName      = "toolbox"
	secretToken   = "token"
	secretVNC     = "vnc-password"
	// secretBoot is the same two values as the JSON file toolboxd reads
	// and removes at start (TOOLBOXD_SECRETS_FILE).
	secretBoot = "boot-secrets.json"
	// The init container copies the boot file from the Secret's volume,
	// which only it mounts, to bootDir, a memory-backed emptyDir where
	// toolboxd may remove it: a Secret volume is read-only, and anything
	// left readable is readable by the agent, who runs as the same uid.
	bootDir       = "/run/toolbox-boot"
	secretSrcDir  = "/run/toolbox-secret"
	initContainer = "secrets"

	workspaceDir = "/workspace"
	homeDir      = "/home/agent"
	tmpDir       = "/tmp"
	sandboxUID   = 1000
)

// The environment toolboxd reads (see cmd/toolboxd and runtime/docker).
const (
	EnvListen      = "TOOLBOXD_LISTEN"
	EnvSecretsFile = "TOOLBOXD_SECRETS_FILE"
	EnvProfile     = "TOOLBOXD_PROFILE"
	EnvWorkspace   = "TOOLBOXD_WORKSPACE"
)

// homeBytes bounds /home/agent: dotfiles, caches and Jupyter's runtime
// files, not work.
const homeBytes = 256 << 20

// logBytes is room in the ephemeral-storage limit for the container's log,
// which the kubelet counts against it alongside the emptyDir volumes.
const logBytes = 64 << 20

// terminationGrace is toolboxd's own shutdown grace (10 s) plus a little.
const terminationGrace = 12

// domainLabels are the labels a sandbox carries in the drydock sense.
func (r *Runtime) domainLabels(spec drydock.SandboxSpec) map[string]string {
	labels := spec.RuntimeLabels(r.opts.ServerID)
	labels[labelProfile] = string(spec.Profile)
	return labels
}

// kubeLabels turns domain labels into Kubernetes labels: keys Kubernetes
// refuses are left out (List then filters on the annotation), values it
// refuses are replaced by a hash, so a selector still narrows the search.
func kubeLabels(id string, domain map[string]string) map[string]string {
	out := map[string]string{labelSandbox: id}
	for k, v := range domain {
		if len(content.IsLabelKey(k)) > 0 || k == labelSandbox {
			continue
		}
		out[k] = labelValue(v)
	}
	return out
}

// labelValue is v when Kubernetes accepts it as a label value and a hash of
// it otherwise. A hash can equal some other value that is valid as it is;
// List compares the annotation's exact labels afterwards, so such a clash
// costs a wider search, never a wrong answer.
func labelValue(v string) string {
	if len(content.IsLabelValue(v)) == 0 {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return "sha256-" + hex.EncodeToString(sum[:])[:48]
}

// selectorFor is the label selector for List's labels (plus managed=true);
// labels whose key Kubernetes refuses are left to the exact filter.
func selectorFor(labels map[string]string) string {
	sel := map[string]string{drydock.LabelManaged: "true"}
	for k, v := range labels {
		if len(content.IsLabelKey(k)) == 0 {
			sel[k] = labelValue(v)
		}
	}
	parts := make([]string, 0, len(sel))
	for _, k := range slices.Sorted(maps.Keys(sel)) {
		parts = append(parts, k+"="+sel[k])
	}
	return strings.Join(parts, ",")
}

func objectMeta(id, namespace string, domain map[string]string) metav1.ObjectMeta {
	data, _ := json.Marshal(domain) // a map of strings always encodes
	return metav1.ObjectMeta{
		Name:        id,
		Namespace:   namespace,
		Labels:      kubeLabels(id, domain),
		Annotations: map[string]string{annotationLabels: string(data)},
	}
}

// secret holds the toolboxd token and the VNC password: the pod's init
// container hands them to toolboxd as a file (never the environment, which
// every process of the sandbox can read through PID 1), and a restarted
// orchestrator reads them back from here. Immutable, because nothing should
// ever change them.
func (r *Runtime) secret(id string, domain map[string]string, token, vnc string) *corev1.Secret {
	immutable := true
	boot, _ := json.Marshal(toolbox.BootSecrets{Token: token, VNCPassword: vnc})
	return &corev1.Secret{
		ObjectMeta: objectMeta(id, r.namespace, domain),
		Immutable:  &immutable,
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			secretToken: []byte(token),
			secretVNC:   []byte(vnc),
			secretBoot:  boot,
		},
	}
}

// pod is the sandbox. Volumes are disk-backed emptyDirs: a workspace holds
// clones, dependencies and build output that can run to gigabytes, and a
// memory-backed emptyDir would charge every byte of it to the pod's memory
// limit (an OOM kill instead of a full disk) and to the node's RAM. The
// kubelet enforces sizeLimit by evicting the pod, and ephemeral-storage
// limits cover the same bytes for scheduling.
func (r *Runtime) pod(id, image string, spec drydock.SandboxSpec, res drydock.Resources, domain map[string]string, gateway string) *corev1.Pod {
	yes, no := true, false
	uid := int64(sandboxUID)
	grace := int64(terminationGrace)
	var runtimeClass *string
	if r.opts.RuntimeClassName != "" {
		rc := r.opts.RuntimeClassName
		runtimeClass = &rc
	}
	seccomp := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}

	vars := maps.Clone(spec.Env)
	if vars == nil {
		vars = map[string]string{}
	}
	for k := range vars {
		if strings.HasPrefix(k, "TOOLBOXD_") {
			delete(vars, k) // ours; a job must not redirect toolboxd
		}
	}
	if gateway != "" {
		// The only way out; it overrides what the spec sets.
		maps.Copy(vars, toolbox.EgressEnv())
		vars[toolbox.EnvEgressListen] = toolbox.EgressListen
		vars[toolbox.EnvEgressGateway] = gateway
		vars[toolbox.EnvSandboxID] = id
	}
	env := make([]corev1.EnvVar, 0, len(vars)+4)
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, corev1.EnvVar{Name: k, Value: vars[k]})
	}
	env = append(env,
		corev1.EnvVar{Name: EnvListen, Value: "tcp://0.0.0.0:" + strconv.Itoa(int(r.port))},
		corev1.EnvVar{Name: EnvProfile, Value: string(spec.Profile)},
		corev1.EnvVar{Name: EnvWorkspace, Value: workspaceDir},
		corev1.EnvVar{Name: EnvSecretsFile, Value: bootDir + "/" + secretBoot},
	)
	memory := res.MemoryBytes
	if r.opts.GVisor {
		var inside map[string]string
		memory, inside = gvisorLimits(res)
		for _, k := range slices.Sorted(maps.Keys(inside)) {
			env = append(env, corev1.EnvVar{Name: k, Value: inside[k]})
		}
	}

	storage := res.WorkspaceBytes + res.TmpBytes + homeBytes + logBytes
	limits := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(int64(res.CPUs*1000+0.5), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(memory, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(storage, resource.BinarySI),
	}
	emptyDir := func(name string, size int64) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			SizeLimit: resource.NewQuantity(size, resource.BinarySI),
		}}}
	}
	containerSecurity := &corev1.SecurityContext{
		RunAsNonRoot:             &yes,
		RunAsUser:                &uid,
		RunAsGroup:               &uid,
		Privileged:               &no,
		AllowPrivilegeEscalation: &no,
		ReadOnlyRootFilesystem:   &yes,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           seccomp,
	}
	secretMode := int32(0o440) // the sandbox's group (fsGroup) reads it
	return &corev1.Pod{
		ObjectMeta: objectMeta(id, r.namespace, domain),
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			RuntimeClassName:             runtimeClass,
			AutomountServiceAccountToken: &no,
			EnableServiceLinks:           &no,
			// The pause container becomes PID 1 and reaps orphans; with
			// toolboxd as PID 1 every orphan of the agent's commands stayed
			// a zombie, holding a pid against the node's podPidsLimit.
			ShareProcessNamespace:         &yes,
			Hostname:                      "sandbox",
			TerminationGracePeriodSeconds: &grace,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   &yes,
				RunAsUser:      &uid,
				RunAsGroup:     &uid,
				FSGroup:        &uid,
				SeccompProfile: seccomp,
			},
			InitContainers: []corev1.Container{{
				Name:            initContainer,
				Image:           image,
				ImagePullPolicy: r.opts.ImagePullPolicy,
				Command:         []string{"cp", secretSrcDir + "/" + secretBoot, bootDir + "/" + secretBoot},
				Resources:       corev1.ResourceRequirements{Requests: limits.DeepCopy(), Limits: limits},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "secret", MountPath: secretSrcDir, ReadOnly: true},
					{Name: "boot", MountPath: bootDir},
				},
				SecurityContext:          containerSecurity,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
			Containers: []corev1.Container{{
				Name:            containerName,
				Image:           image,
				ImagePullPolicy: r.opts.ImagePullPolicy,
				WorkingDir:      workspaceDir,
				Ports:           []corev1.ContainerPort{{Name: portName, ContainerPort: r.port, Protocol: corev1.ProtocolTCP}},
				Env:             env,
				Resources:       corev1.ResourceRequirements{Requests: limits.DeepCopy(), Limits: limits},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "workspace", MountPath: workspaceDir},
					{Name: "tmp", MountPath: tmpDir},
					{Name: "home", MountPath: homeDir},
					{Name: "boot", MountPath: bootDir},
				},
				SecurityContext:          containerSecurity,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
			Volumes: []corev1.Volume{
				emptyDir("workspace", res.WorkspaceBytes),
				emptyDir("tmp", res.TmpBytes),
				emptyDir("home", homeBytes),
				{Name: "boot", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
					Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(64<<10, resource.BinarySI),
				}}},
				{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: id, DefaultMode: &secretMode,
					Items: []corev1.KeyToPath{{Key: secretBoot, Path: secretBoot}},
				}}},
			},
		},
	}
}

// networkPolicy isolates one sandbox: ingress only from the orchestrator's
// pods on toolboxd's port; egress only to the orchestrator's pods on the
// egress gateway's port, through which the gateway applies the job's
// allowlist by name (nothing at all without a gateway: policyTypes names
// Egress and no rule allows any). A NetworkPolicy matches addresses only,
// so it could not enforce a list of names itself. Policies add up, so the
// namespace's default-deny policy (see deploy/kubernetes) still holds for a
// sandbox whose own policy is gone.
func (r *Runtime) networkPolicy(id string, domain map[string]string) *networkingv1.NetworkPolicy {
	tcp := corev1.ProtocolTCP
	port := intstr.FromInt32(r.port)
	orchestrator := networkingv1.NetworkPolicyPeer{
		PodSelector: &metav1.LabelSelector{MatchLabels: maps.Clone(r.opts.Orchestrator.Labels)},
	}
	if ns := r.opts.Orchestrator.Namespace; ns != "" && ns != r.namespace {
		orchestrator.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
	}
	var egress []networkingv1.NetworkPolicyEgressRule
	if r.gwHost != "" {
		gw := intstr.FromInt32(r.gwPodPort)
		egress = []networkingv1.NetworkPolicyEgressRule{{
			To:    []networkingv1.NetworkPolicyPeer{*orchestrator.DeepCopy()},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &gw}},
		}}
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: objectMeta(id, r.namespace, domain),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{labelSandbox: id}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{orchestrator},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
			}},
			Egress: egress,
		},
	}
}

// sandboxFrom builds the domain view of a pod and its secret (nil when it
// could not be read).
func (r *Runtime) sandboxFrom(pod *corev1.Pod, sec *corev1.Secret) *drydock.Sandbox {
	labels := map[string]string{}
	if err := json.Unmarshal([]byte(pod.Annotations[annotationLabels]), &labels); err != nil || len(labels) == 0 {
		labels = maps.Clone(pod.Labels)
		delete(labels, labelSandbox)
	}
	sb := &drydock.Sandbox{
		ID:        pod.Name,
		Runtime:   r.Name(),
		Profile:   drydock.Profile(labels[labelProfile]),
		Labels:    labels,
		State:     podState(pod),
		CreatedAt: pod.CreationTimestamp.UTC(),
		Endpoint:  endpoint(pod),
		// The pod's RuntimeClass decides (gvisor, kata-fc, ...); without
		// one the node's default runtime, runc on every common cluster.
		Isolation: drydock.IsolationRunc,
	}
	if rc := pod.Spec.RuntimeClassName; rc != nil && *rc != "" {
		sb.Isolation = *rc
	}
	if sec != nil {
		sb.Token, sb.VNCPassword = string(sec.Data[secretToken]), string(sec.Data[secretVNC])
	}
	return sb
}

// endpoint is the pod IP and the toolbox port of the pod's own spec, so a
// restarted orchestrator configured with another port still reaches old
// sandboxes.
func endpoint(pod *corev1.Pod) drydock.Endpoint {
	if pod.Status.PodIP == "" {
		return drydock.Endpoint{}
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == portName {
				return drydock.Endpoint{Network: "tcp", Address: net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(p.ContainerPort)))}
			}
		}
	}
	return drydock.Endpoint{}
}

func podState(pod *corev1.Pod) drydock.SandboxState {
	switch pod.Status.Phase {
	case corev1.PodRunning:
		return drydock.SandboxRunning
	case corev1.PodSucceeded, corev1.PodFailed:
		return drydock.SandboxStopped
	}
	return drydock.SandboxUnknown
}

// hasLabels reports whether have carries every label of want.
func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// podFailure says why a pod can never start, or "" while it still may.
func podFailure(pod *corev1.Pod) string {
	switch pod.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		msg := fmt.Sprintf("pod %s", strings.ToLower(string(pod.Status.Phase)))
		if pod.Status.Reason != "" {
			msg += ": " + pod.Status.Reason
		}
		if pod.Status.Message != "" {
			msg += ": " + pod.Status.Message
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil {
				msg += fmt.Sprintf(" (container exited %d: %s %s)", t.ExitCode, t.Reason, strings.TrimSpace(t.Message))
			}
		}
		return msg
	}
	// The init container comes first and uses the same image, so a
	// missing image shows there before the main container has a status.
	for _, cs := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		if w := cs.State.Waiting; w != nil && fatalWaiting[w.Reason] {
			return cs.Name + ": " + w.Reason + ": " + w.Message
		}
	}
	return ""
}

// fatalWaiting are the kubelet's waiting reasons after which a sandbox will
// not start without someone changing something: a missing or unpullable
// image (the kubelet retries a pull, but a sandbox that cannot pull on the
// first try is not worth waiting minutes for), a bad spec.
var fatalWaiting = map[string]bool{
	"ImagePullBackOff":           true,
	"ErrImageNeverPull":          true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
	"CrashLoopBackOff":           true,
}
