package main

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/drydockhq/drydock"
	k8sruntime "github.com/drydockhq/drydock/runtime/kubernetes"
)

// KubeOptions configure --runtime kubernetes. ServerCmd embeds them with
// an empty embed tag, so the flags are named as written here.
type KubeOptions struct {
	Kubeconfig             string            `env:"KUBECONFIG" help:"Kubeconfig file for --runtime kubernetes (default: the in-cluster service account, then ~/.kube/config)." placeholder:"FILE"`
	KubeContext            string            `env:"DRYDOCK_KUBE_CONTEXT" help:"Kubeconfig context (default: the current one)."`
	KubeNamespace          string            `default:"drydock-sandboxes" env:"DRYDOCK_KUBE_NAMESPACE" help:"Namespace of the sandbox pods, their Secrets and NetworkPolicies."`
	KubeRuntimeClass       string            `env:"DRYDOCK_KUBE_RUNTIME_CLASS" help:"RuntimeClass of sandbox pods, e.g. gvisor or kata-fc (default: the cluster's default runtime)."`
	KubeGVisor             bool              `name:"kube-gvisor" env:"DRYDOCK_KUBE_GVISOR" help:"The --kube-runtime-class runs gVisor: toolboxd then enforces the pids and memory limits inside the pod, which gVisor's host cgroup cannot. Implied by a class named *gvisor* or *runsc*."`
	KubeToolboxPort        int32             `default:"7070" env:"DRYDOCK_KUBE_TOOLBOX_PORT" help:"TCP port of toolboxd in sandbox pods."`
	KubeOrchestratorNS     string            `name:"kube-orchestrator-namespace" env:"POD_NAMESPACE" help:"Namespace of the orchestrator's pods, which alone may reach toolboxd (default: the sandbox namespace)."`
	KubeImagePullPolicy    string            `default:"IfNotPresent" enum:"Always,IfNotPresent,Never" env:"DRYDOCK_KUBE_IMAGE_PULL_POLICY" help:"Pull policy of sandbox images."`
	KubeEgressGateway      string            `env:"DRYDOCK_KUBE_EGRESS_GATEWAY" placeholder:"HOST:PORT" help:"Where sandbox pods reach the orchestrators' egress gateway (--egress-listen), e.g. the Service drydock-egress.drydock.svc:3129. Resolved by the orchestrator, so pods need no DNS. Without it pods have no network at all and jobs with egress are refused."`
	KubeEgressGatewayPort  int32             `env:"DRYDOCK_KUBE_EGRESS_GATEWAY_PORT" help:"Port of the orchestrator's pods that sandbox NetworkPolicies open for the gateway (default: the port of --kube-egress-gateway)."`
	KubeOrchestratorLabels map[string]string `env:"DRYDOCK_KUBE_ORCHESTRATOR_LABELS" help:"Labels of the orchestrator's pods (default: app.kubernetes.io/name=drydock,app.kubernetes.io/component=orchestrator)."`
}

// kubernetesRuntime builds the Kubernetes runtime and lists the sandboxes
// once, so that a wrong kubeconfig or missing permissions stop the server
// at start with a clear message.
func kubernetesRuntime(ctx context.Context, k KubeOptions, nodeID string, images map[drydock.Profile]string, log *slog.Logger) (*k8sruntime.Runtime, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.KubeContext}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes runtime: no cluster configuration (run in a pod with a service account, or set --kubeconfig): %w", err)
	}
	cfg.UserAgent = "drydock/" + version
	cs, err := k8sruntime.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes runtime: client: %w", err)
	}
	rt, err := k8sruntime.New(k8sruntime.Options{
		Client:            cs,
		Namespace:         k.KubeNamespace,
		ServerID:          nodeID,
		Images:            images,
		ImagePullPolicy:   corev1.PullPolicy(k.KubeImagePullPolicy),
		RuntimeClassName:  k.KubeRuntimeClass,
		GVisor:            k.KubeGVisor,
		ToolboxPort:       k.KubeToolboxPort,
		Orchestrator:      k8sruntime.Peer{Namespace: k.KubeOrchestratorNS, Labels: k.KubeOrchestratorLabels},
		EgressGateway:     k.KubeEgressGateway,
		EgressGatewayPort: k.KubeEgressGatewayPort,
		Logger:            log,
	})
	if err != nil {
		return nil, err
	}
	if _, err := rt.List(ctx, map[string]string{drydock.LabelManaged: "true"}); err != nil {
		return nil, fmt.Errorf("cannot list sandboxes in namespace %s at %s: %w; check the kubeconfig and that the service account has the Role in deploy/kubernetes", rt.Namespace(), cfg.Host, err)
	}
	if k.KubeEgressGateway == "" {
		log.Warn("kubernetes runtime without --kube-egress-gateway: sandbox pods have no network, and jobs with egress are refused")
	}
	log.Info("kubernetes runtime", "api", cfg.Host, "namespace", rt.Namespace(), "runtime_class", k.KubeRuntimeClass, "gvisor_limits", rt.GVisor(), "egress_gateway", k.KubeEgressGateway)
	return rt, nil
}
