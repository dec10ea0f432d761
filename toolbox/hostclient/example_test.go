package hostclient_test

import (
	"fmt"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox/hostclient"
)

// The runner, the agent's tools and the API share one Clients, so a sandbox
// has one set of kept-alive connections however many parts talk to it.
func ExampleClients() {
	clients := hostclient.NewClients()
	sb := &drydock.Sandbox{ID: "sb-1", Endpoint: drydock.Endpoint{Network: "unix", Address: "/run/drydock/sb-1/toolbox/toolboxd.sock"}, Token: "t"}

	runner, api := clients.Get(sb), clients.Get(sb)
	fmt.Println("shared:", runner == api)

	claimed := *sb
	claimed.Token = "job-token" // a claim replaced the token
	fmt.Println("shared after the claim:", clients.Get(&claimed) == runner)

	clients.Forget(sb.ID) // the sandbox was destroyed
	// Output:
	// shared: true
	// shared after the claim: false
}
