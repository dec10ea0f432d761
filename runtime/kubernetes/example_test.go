package kubernetes_test

import (
	"fmt"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/drydockhq/drydock"
	k8sruntime "github.com/drydockhq/drydock/runtime/kubernetes"
)

// An orchestrator running in the cluster builds the runtime from its
// service account; sandboxes run under gVisor.
func ExampleNew() {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		fmt.Println("not in a cluster:", err)
		return
	}
	cs, err := k8sruntime.NewClient(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	rt, err := k8sruntime.New(k8sruntime.Options{
		Client:           cs,
		Namespace:        "drydock-sandboxes",
		ServerID:         "drydock-0",
		RuntimeClassName: "gvisor",
		Orchestrator:     k8sruntime.Peer{Namespace: "drydock"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var _ drydock.Runtime = rt
}

// The permissions a Role must grant the orchestrator in the sandbox
// namespace.
func ExamplePolicyRules() {
	for _, r := range k8sruntime.PolicyRules() {
		group := r.APIGroups[0]
		if group == "" {
			group = "core"
		}
		fmt.Printf("%s %s: %s\n", group, strings.Join(r.Resources, ","), strings.Join(r.Verbs, " "))
	}
	// Output:
	// core pods: create delete get list watch
	// core secrets: create delete get list patch
	// networking.k8s.io networkpolicies: create delete patch
}
