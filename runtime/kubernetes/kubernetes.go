package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	"k8s.io/client-go/rest"

	"github.com/drydockhq/drydock"
)

var _ drydock.Runtime = (*Runtime)(nil)

// DefaultNamespace holds the sandboxes when Options.Namespace is empty.
const DefaultNamespace = "drydock-sandboxes"

// DefaultToolboxPort is the TCP port toolboxd listens on inside a pod.
const DefaultToolboxPort = 7070

// DefaultResources are the limits of a sandbox whose spec leaves them zero.
// PidsLimit has no per-pod field in Kubernetes: the kubelet's podPidsLimit
// (a node setting) bounds processes instead.
var DefaultResources = drydock.Resources{
	CPUs:           2,
	MemoryBytes:    4 << 30,
	WorkspaceBytes: 2 << 30,
	TmpBytes:       1 << 30,
}

// DefaultOrchestratorLabels select the orchestrator's pods, the only ones
// that may reach toolboxd; deploy/kubernetes labels its Deployment so.
var DefaultOrchestratorLabels = map[string]string{
	"app.kubernetes.io/name":      "drydock",
	"app.kubernetes.io/component": "orchestrator",
}

// idPattern is the shape of the ids this runtime hands out, which are also
// the names of the pod, its Secret and its NetworkPolicy. Anything else is
// not ours.
var idPattern = regexp.MustCompile(`^drydock-[0-9a-f]{16}$`)

// Options configures a Runtime.
type Options struct {
	// Client talks to the cluster. Required.
	Client Client
	// Namespace holds the sandboxes' pods, Secrets and NetworkPolicies;
	// empty means DefaultNamespace.
	Namespace string
	// ServerID is the value of the drydock.server label on sandboxes this
	// runtime creates.
	ServerID string
	// Images maps a profile to the image used when a spec names none.
	// Missing profiles use drydock-sandbox:<profile>.
	Images map[drydock.Profile]string
	// ImagePullPolicy defaults to IfNotPresent: sandbox images are usually
	// loaded onto the nodes, not pulled.
	ImagePullPolicy corev1.PullPolicy
	// Defaults overrides DefaultResources field by field.
	Defaults drydock.Resources
	// RuntimeClassName selects the container runtime handler, the way to
	// stronger isolation: a gVisor (runsc) or Kata (QEMU, Firecracker)
	// RuntimeClass; see deploy/kubernetes. Empty means the cluster's
	// default runtime.
	RuntimeClassName string
	// GVisor says that RuntimeClassName runs pods under gVisor (its runsc
	// handler), whose kernel is in user space: the node's cgroup of such a
	// pod holds gVisor's sentry, gofer and stubs, not the agent's
	// processes, so the pod's limits must move inside (see gvisorLimits).
	// New sets it for a class whose name says gvisor or runsc (gVisor's
	// own documentation and GKE Sandbox name it "gvisor"); set it for a
	// class named otherwise. It is not read from the RuntimeClass's
	// handler, which would need a permission at cluster scope.
	GVisor bool
	// ToolboxPort is toolboxd's TCP port in the pod; 0 means
	// DefaultToolboxPort.
	ToolboxPort int32
	// Orchestrator selects the pods allowed to reach toolboxd.
	Orchestrator Peer
	// EgressGateway is the host:port at which sandbox pods reach the
	// orchestrator's egress gateway (drydock server --egress-listen),
	// usually a Service in front of the orchestrator's pods. A pod's only
	// way out is through it: toolboxd forwards the pod's proxy port there,
	// and the gateway applies the job's allowlist by name, as on Docker. A
	// host name is resolved by the runtime at each Create, so that pods
	// need no DNS. Empty means pods have no way out at all, and a sandbox
	// whose spec asks for egress is refused.
	EgressGateway string
	// EgressGatewayPort is the port of the orchestrator's pods that the
	// sandbox's NetworkPolicy opens for the gateway; 0 means the port of
	// EgressGateway (a Service whose port equals its targetPort).
	EgressGatewayPort int32
	// StartTimeout bounds how long Create waits for the pod to run (image
	// pull and scheduling included); 0 means 5 minutes.
	StartTimeout time.Duration
	// DeleteTimeout bounds how long Destroy waits for the pod to be gone;
	// 0 means a minute.
	DeleteTimeout time.Duration
	// Logger receives one line per create and destroy; nil discards.
	Logger *slog.Logger
}

// Client is the part of client-go's kubernetes.Interface the runtime uses:
// a *kubernetes.Clientset or a fake.Clientset. NewClient builds one with
// only these two groups, which keeps the other API groups' clients out of
// the binary.
type Client interface {
	CoreV1() corev1client.CoreV1Interface
	NetworkingV1() networkingv1client.NetworkingV1Interface
}

// NewClient makes a Client from a REST configuration (a kubeconfig or the
// in-cluster service account).
func NewClient(cfg *rest.Config) (Client, error) {
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	net, err := networkingv1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return groups{core, net}, nil
}

type groups struct {
	core *corev1client.CoreV1Client
	net  *networkingv1client.NetworkingV1Client
}

func (g groups) CoreV1() corev1client.CoreV1Interface                   { return g.core }
func (g groups) NetworkingV1() networkingv1client.NetworkingV1Interface { return g.net }

// Peer names pods by namespace and labels.
type Peer struct {
	// Namespace is the orchestrator's namespace; empty means the sandbox
	// namespace.
	Namespace string
	// Labels of the orchestrator's pods; nil means
	// DefaultOrchestratorLabels.
	Labels map[string]string
}

// Runtime is a drydock.Runtime on a Kubernetes cluster: one pod per
// sandbox, with a Secret for its credentials and a NetworkPolicy.
type Runtime struct {
	cs        Client
	opts      Options
	namespace string
	port      int32
	gwHost    string // of Options.EgressGateway; "" without a gateway
	gwPort    int32  // pods dial this port of gwHost
	gwPodPort int32  // and the policy opens this one
	log       *slog.Logger
}

// New checks the options. It does not contact the cluster.
func New(opts Options) (*Runtime, error) {
	if opts.Client == nil {
		return nil, errors.New("kubernetes runtime: no client")
	}
	ns := opts.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	if errs := content.IsDNS1123Label(ns); len(errs) > 0 {
		return nil, fmt.Errorf("kubernetes runtime: namespace %q: %s", ns, strings.Join(errs, "; "))
	}
	if rc := opts.RuntimeClassName; rc != "" {
		if errs := content.IsDNS1123Subdomain(rc); len(errs) > 0 {
			return nil, fmt.Errorf("kubernetes runtime: runtime class %q: %s", rc, strings.Join(errs, "; "))
		}
	}
	opts.GVisor = opts.GVisor || isGVisorClass(opts.RuntimeClassName)
	if opts.GVisor && opts.RuntimeClassName == "" {
		return nil, errors.New("kubernetes runtime: gVisor needs the RuntimeClass that selects it (RuntimeClassName)")
	}
	port := opts.ToolboxPort
	if port == 0 {
		port = DefaultToolboxPort
	}
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("kubernetes runtime: toolbox port %d out of range", port)
	}
	if opts.Orchestrator.Labels == nil {
		opts.Orchestrator.Labels = maps.Clone(DefaultOrchestratorLabels)
	}
	for k, v := range opts.Orchestrator.Labels {
		if len(content.IsLabelKey(k)) > 0 || len(content.IsLabelValue(v)) > 0 {
			return nil, fmt.Errorf("kubernetes runtime: orchestrator label %s=%s is not a valid Kubernetes label", k, v)
		}
	}
	if opts.ImagePullPolicy == "" {
		opts.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 5 * time.Minute
	}
	if opts.DeleteTimeout == 0 {
		opts.DeleteTimeout = time.Minute
	}
	var gwHost string
	var gwPort, gwPodPort int32
	if opts.EgressGateway != "" {
		h, p, err := net.SplitHostPort(opts.EgressGateway)
		n, perr := strconv.ParseUint(p, 10, 16)
		if err != nil || perr != nil || n == 0 || h == "" {
			return nil, fmt.Errorf("kubernetes runtime: egress gateway %q: want host:port, e.g. drydock-egress.drydock.svc:3129", opts.EgressGateway)
		}
		gwHost, gwPort, gwPodPort = h, int32(n), int32(n)
		if opts.EgressGatewayPort != 0 {
			gwPodPort = opts.EgressGatewayPort
		}
		if gwPodPort < 1 || gwPodPort > 65535 {
			return nil, fmt.Errorf("kubernetes runtime: egress gateway port %d out of range", gwPodPort)
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runtime{
		cs: opts.Client, opts: opts, namespace: ns, port: port,
		gwHost: gwHost, gwPort: gwPort, gwPodPort: gwPodPort,
		log: log.With("component", "runtime.kubernetes", "namespace", ns),
	}, nil
}

// Name implements drydock.Runtime.
func (r *Runtime) Name() string { return "kubernetes" }

// GVisor reports whether pods get gVisor's limits (Options.GVisor, or a
// class named for gVisor).
func (r *Runtime) GVisor() bool { return r.opts.GVisor }

// Namespace is where this runtime keeps its sandboxes.
func (r *Runtime) Namespace() string { return r.namespace }

// Create implements drydock.Runtime. It makes the Secret, then the
// NetworkPolicy, then the pod (so the pod never runs unconfined), hands the
// Secret and the policy to the pod as owner (so the garbage collector takes
// them if the pod goes any other way than Destroy), and waits for the pod
// to run with an IP. On any failure it deletes what it made.
func (r *Runtime) Create(ctx context.Context, spec drydock.SandboxSpec) (*drydock.Sandbox, error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	if len(spec.Egress) > 0 && r.gwHost == "" {
		return nil, drydock.Errorf(drydock.EINVALID, "this server runs sandboxes on Kubernetes without an egress gateway, so a job cannot reach the network; start the server with --egress-listen and --kube-egress-gateway (see deploy/kubernetes), or schedule the job without egress")
	}
	for k := range spec.Env {
		if errs := validation.IsEnvVarName(k); len(errs) > 0 {
			return nil, drydock.Errorf(drydock.EINVALID, "environment variable name %q: %s", k, strings.Join(errs, "; "))
		}
	}
	img := spec.Image
	if img == "" {
		img = r.opts.Images[spec.Profile]
	}
	if img == "" {
		img = "drydock-sandbox:" + string(spec.Profile)
	}
	res := r.resources(spec.Resources)
	if err := validResources(res); err != nil {
		return nil, err
	}

	gateway, err := r.gateway(ctx)
	if err != nil {
		return nil, err
	}
	id := "drydock-" + drydock.RandomHex(8)
	token, vnc := drydock.NewSandboxToken(), drydock.NewVNCPassword()
	domain := r.domainLabels(spec)
	sb, err := r.create(ctx, id, img, spec, res, domain, gateway, token, vnc)
	if err != nil {
		// Nothing may be left behind: a context cancelled mid-create must
		// not keep the cleanup from running.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.DeleteTimeout+10*time.Second)
		defer cancel()
		if derr := r.destroy(cctx, id); derr != nil {
			r.log.Warn("clean up a failed create", "sandbox", id, "err", derr)
		}
		return nil, err
	}
	r.log.Info("sandbox created", "sandbox", id, "job", spec.JobID, "image", img, "profile", spec.Profile,
		"runtime_class", r.opts.RuntimeClassName, "pod_ip", sb.Endpoint.Address)
	return sb, nil
}

func (r *Runtime) create(ctx context.Context, id, img string, spec drydock.SandboxSpec, res drydock.Resources, domain map[string]string, gateway, token, vnc string) (*drydock.Sandbox, error) {
	sec, err := r.cs.CoreV1().Secrets(r.namespace).Create(ctx, r.secret(id, domain, token, vnc), metav1.CreateOptions{})
	if err != nil {
		return nil, apiError(fmt.Sprintf("create sandbox %s: secret", id), err)
	}
	if _, err := r.cs.NetworkingV1().NetworkPolicies(r.namespace).Create(ctx, r.networkPolicy(id, domain), metav1.CreateOptions{}); err != nil {
		return nil, apiError(fmt.Sprintf("create sandbox %s: network policy", id), err)
	}
	pod, err := r.cs.CoreV1().Pods(r.namespace).Create(ctx, r.pod(id, img, spec, res, domain, gateway), metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			// Admission (Pod Security, quotas, a missing RuntimeClass)
			// refused the pod: the message says why, and a retry cannot
			// help.
			return nil, fmt.Errorf("create sandbox %s: %w", id, drydock.Errorf(drydock.EINVALID, "the cluster refused the sandbox pod: %s", apiMessage(err)))
		}
		return nil, apiError(fmt.Sprintf("create sandbox %s: pod", id), err)
	}
	if err := r.adopt(ctx, pod); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, r.opts.StartTimeout)
	defer cancel()
	pod, err = r.waitRunning(wctx, pod)
	if err != nil {
		if wctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("create sandbox %s: %w", id, drydock.Errorf(drydock.EUNAVAILABLE, "sandbox pod not running after %v: %v", r.opts.StartTimeout, err))
		}
		return nil, fmt.Errorf("create sandbox %s: %w", id, err)
	}
	return r.sandboxFrom(pod, sec), nil
}

// gateway is the address pods dial for the egress gateway ("" without
// one). A name is resolved here, by the orchestrator, so that sandboxes
// need no DNS, which would be a way out of its own.
func (r *Runtime) gateway(ctx context.Context) (string, error) {
	if r.gwHost == "" {
		return "", nil
	}
	port := strconv.Itoa(int(r.gwPort))
	if a, err := netip.ParseAddr(r.gwHost); err == nil {
		return net.JoinHostPort(a.String(), port), nil
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(lctx, "ip", r.gwHost)
	if err != nil || len(addrs) == 0 {
		return "", drydock.Errorf(drydock.EUNAVAILABLE, "the egress gateway's name %s does not resolve (%v); check --kube-egress-gateway and its Service", r.gwHost, err)
	}
	return net.JoinHostPort(addrs[0].Unmap().String(), port), nil
}

// adopt makes the pod the owner of its Secret and NetworkPolicy.
func (r *Runtime) adopt(ctx context.Context, pod *corev1.Pod) error {
	no := false
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, BlockOwnerDeletion: &no,
	}}}})
	if _, err := r.cs.CoreV1().Secrets(r.namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return apiError(fmt.Sprintf("create sandbox %s: adopt secret", pod.Name), err)
	}
	if _, err := r.cs.NetworkingV1().NetworkPolicies(r.namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return apiError(fmt.Sprintf("create sandbox %s: adopt network policy", pod.Name), err)
	}
	return nil
}

// waitRunning watches the pod until it runs with an IP, fails, or ctx
// ends. The watch starts at the pod's resource version, so no change is
// missed; a watch the server closes (they time out) is reopened from a
// fresh read.
func (r *Runtime) waitRunning(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	pods := r.cs.CoreV1().Pods(r.namespace)
	name := pod.Name
	for {
		if done, err := started(pod); done || err != nil {
			return pod, err
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion: pod.ResourceVersion,
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%w (last seen: %s)", ctx.Err(), describe(pod))
			}
			return nil, apiError("watch pod", err)
		}
		next, err := watchStart(ctx, w, pod)
		w.Stop()
		switch {
		case err != nil:
			return nil, err
		case next != nil:
			return next, nil
		}
		fresh, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, errors.New("the pod was deleted while it started")
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%w (last seen: %s)", ctx.Err(), describe(pod))
			}
			return nil, apiError("get pod", err)
		}
		pod = fresh
	}
}

// watchStart reads the watch until the pod has started (returned) or cannot
// (an error). It returns nil, nil when the watch ends first.
func watchStart(ctx context.Context, w watch.Interface, pod *corev1.Pod) (*corev1.Pod, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last seen: %s)", ctx.Err(), describe(pod))
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, nil
			}
			p, isPod := ev.Object.(*corev1.Pod)
			switch {
			case ev.Type == watch.Error || ev.Type == watch.Bookmark:
				// Error is how a watch says its resource version is too
				// old: read afresh.
				if ev.Type == watch.Error {
					return nil, nil
				}
				continue
			case !isPod || p.Name != pod.Name:
				continue // a server that ignored the field selector
			case ev.Type == watch.Deleted:
				return nil, errors.New("the pod was deleted while it started")
			}
			pod = p
			if done, err := started(pod); done || err != nil {
				return pod, err
			}
		}
	}
}

// started reports whether the pod runs with an IP, or why it never will.
func started(pod *corev1.Pod) (bool, error) {
	if pod.DeletionTimestamp != nil {
		return false, errors.New("the pod is being deleted")
	}
	if msg := podFailure(pod); msg != "" {
		if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
			return false, fmt.Errorf("sandbox %s", msg)
		}
		return false, drydock.Errorf(drydock.EINVALID, "sandbox pod cannot start: %s", msg)
	}
	return pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "", nil
}

// describe is what the pod is waiting for, for the message of a timeout.
func describe(pod *corev1.Pod) string {
	parts := []string{string(pod.Status.Phase)}
	if pod.Status.Phase == "" {
		parts[0] = "Pending"
	}
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Reason != "" {
			parts = append(parts, c.Reason+": "+c.Message)
		}
	}
	for _, cs := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		if w := cs.State.Waiting; w != nil {
			parts = append(parts, w.Reason+": "+w.Message)
		}
	}
	return strings.Join(parts, "; ")
}

// Get implements drydock.Runtime. A pod being deleted is gone already: it
// is on its way out and no job may reattach to it.
func (r *Runtime) Get(ctx context.Context, id string) (*drydock.Sandbox, error) {
	if !idPattern.MatchString(id) {
		return nil, drydock.Errorf(drydock.ENOTFOUND, "sandbox %q not found", id)
	}
	pod, err := r.cs.CoreV1().Pods(r.namespace).Get(ctx, id, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, drydock.Errorf(drydock.ENOTFOUND, "sandbox %s not found", id)
	}
	if err != nil {
		return nil, apiError(fmt.Sprintf("get sandbox %s", id), err)
	}
	if pod.DeletionTimestamp != nil || pod.Labels[drydock.LabelManaged] != "true" {
		return nil, drydock.Errorf(drydock.ENOTFOUND, "sandbox %s not found", id)
	}
	sec, err := r.cs.CoreV1().Secrets(r.namespace).Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, apiError(fmt.Sprintf("get sandbox %s: secret", id), err)
		}
		r.log.Warn("sandbox secret missing", "sandbox", id)
		sec = nil
	}
	return r.sandboxFrom(pod, sec), nil
}

// List implements drydock.Runtime. The label selector narrows the search on
// the server; the exact labels in the annotation decide.
func (r *Runtime) List(ctx context.Context, labels map[string]string) ([]*drydock.Sandbox, error) {
	sel := metav1.ListOptions{LabelSelector: selectorFor(labels)}
	pods, err := r.cs.CoreV1().Pods(r.namespace).List(ctx, sel)
	if err != nil {
		return nil, apiError("list sandboxes", err)
	}
	if len(pods.Items) == 0 {
		return nil, nil
	}
	secrets, err := r.cs.CoreV1().Secrets(r.namespace).List(ctx, sel)
	if err != nil {
		return nil, apiError("list sandbox secrets", err)
	}
	byName := make(map[string]*corev1.Secret, len(secrets.Items))
	for i := range secrets.Items {
		byName[secrets.Items[i].Name] = &secrets.Items[i]
	}
	var out []*drydock.Sandbox
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !idPattern.MatchString(pod.Name) || pod.DeletionTimestamp != nil || pod.Labels[drydock.LabelManaged] != "true" {
			continue
		}
		sb := r.sandboxFrom(pod, byName[pod.Name])
		if !hasLabels(sb.Labels, labels) {
			continue
		}
		out = append(out, sb)
	}
	slices.SortFunc(out, func(a, b *drydock.Sandbox) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Destroy implements drydock.Runtime. It deletes the pod with background
// propagation and waits until the pod is gone, that is until the kubelet
// has stopped its processes, then deletes the NetworkPolicy and the Secret.
// Foreground propagation would instead let the garbage collector delete the
// policy while the sandbox still runs. Deleting a sandbox that is already
// gone, or half gone, finishes the job.
func (r *Runtime) Destroy(ctx context.Context, id string) error {
	if !idPattern.MatchString(id) {
		return nil
	}
	if err := r.destroy(ctx, id); err != nil {
		return err
	}
	r.log.Info("sandbox destroyed", "sandbox", id)
	return nil
}

func (r *Runtime) destroy(ctx context.Context, id string) error {
	pods := r.cs.CoreV1().Pods(r.namespace)
	pod, err := pods.Get(ctx, id, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return apiError(fmt.Sprintf("destroy sandbox %s", id), err)
	case pod.Labels[drydock.LabelManaged] != "true":
		return nil // not ours, whatever its name
	default:
		if err := r.deletePod(ctx, pod); err != nil {
			return fmt.Errorf("destroy sandbox %s: %w", id, err)
		}
	}
	bg := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &bg}
	if err := r.cs.NetworkingV1().NetworkPolicies(r.namespace).Delete(ctx, id, del); err != nil && !apierrors.IsNotFound(err) {
		return apiError(fmt.Sprintf("destroy sandbox %s: network policy", id), err)
	}
	if err := r.cs.CoreV1().Secrets(r.namespace).Delete(ctx, id, del); err != nil && !apierrors.IsNotFound(err) {
		return apiError(fmt.Sprintf("destroy sandbox %s: secret", id), err)
	}
	return nil
}

// deletePod deletes the pod (only this incarnation of it: the UID is a
// precondition) and waits until the API server has forgotten it.
func (r *Runtime) deletePod(ctx context.Context, pod *corev1.Pod) error {
	pods := r.cs.CoreV1().Pods(r.namespace)
	bg := metav1.DeletePropagationBackground
	uid := pod.UID
	err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{
		PropagationPolicy: &bg,
		Preconditions:     &metav1.Preconditions{UID: &uid},
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return apiError("delete pod", err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.DeleteTimeout)
	defer cancel()
	for {
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String()})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("pod still terminating after %v", r.opts.DeleteTimeout)
			}
			return apiError("watch pod", err)
		}
		gone, err := watchGone(ctx, w, pods, pod)
		w.Stop()
		if gone || err != nil {
			return err
		}
	}
}

// watchGone waits on a watch opened before it reads the pod, so that the
// deletion cannot slip between the read and the watch.
func watchGone(ctx context.Context, w watch.Interface, pods interface {
	Get(context.Context, string, metav1.GetOptions) (*corev1.Pod, error)
}, pod *corev1.Pod) (bool, error) {
	cur, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && cur.UID != pod.UID) {
		return true, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("pod still terminating after the delete timeout")
		}
		return false, apiError("get pod", err)
	}
	for {
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("pod still terminating: %w", ctx.Err())
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Error {
				return false, nil
			}
			if p, isPod := ev.Object.(*corev1.Pod); isPod && p.Name == pod.Name && ev.Type == watch.Deleted {
				return true, nil
			}
		}
	}
}

// resources has no pids limit under runc: Kubernetes sets none per pod
// (the node's setting applies). Under gVisor toolboxd applies one inside
// (gvisorLimits), gvisorDefaultTasks unless the spec or Defaults say.
func (r *Runtime) resources(spec drydock.Resources) drydock.Resources {
	res := spec.Or(r.opts.Defaults, DefaultResources)
	if !r.opts.GVisor {
		res.PidsLimit = 0
	} else if res.PidsLimit <= 0 {
		res.PidsLimit = gvisorDefaultTasks
	}
	return res
}

func validResources(r drydock.Resources) error {
	switch {
	case r.PidsLimit != 0 && r.PidsLimit < 16:
		return drydock.Errorf(drydock.EINVALID, "pids limit %d is below the minimum of 16", r.PidsLimit)
	case r.CPUs < 0.01:
		return drydock.Errorf(drydock.EINVALID, "cpus %.3g is below the minimum of 0.01", r.CPUs)
	case r.MemoryBytes < 32<<20:
		return drydock.Errorf(drydock.EINVALID, "memory %d bytes is below the minimum of 32 MiB", r.MemoryBytes)
	case r.WorkspaceBytes < 1<<20 || r.TmpBytes < 1<<20:
		return drydock.Errorf(drydock.EINVALID, "workspace and tmp must be at least 1 MiB")
	}
	return nil
}

// apiError marks failures to reach the API server, and its overload, as
// retryable; anything else keeps its detail for the logs only.
func apiError(op string, err error) error {
	if apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || isConnError(err) {
		return fmt.Errorf("%s: %w: %w", op, drydock.Errorf(drydock.EUNAVAILABLE, "kubernetes API unavailable"), err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// isConnError: a transport failure is not an API status at all.
func isConnError(err error) bool {
	var status apierrors.APIStatus
	return !errors.As(err, &status) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}

// vncPassword is 8 characters because classic VNC authentication uses only
// the first eight; the alphabet leaves out look-alike characters for people
// who type it.
