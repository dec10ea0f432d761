package hostclient_test

import (
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox/hostclient"
)

func TestClientsKeepOneClientPerSandbox(t *testing.T) {
	t.Parallel()
	cs := hostclient.NewClients()
	a := &drydock.Sandbox{ID: "a", Endpoint: drydock.Endpoint{Network: "unix", Address: "/x.sock"}, Token: "t1"}
	b := &drydock.Sandbox{ID: "b", Endpoint: drydock.Endpoint{Network: "unix", Address: "/y.sock"}, Token: "t2"}
	if cs.Get(a) != cs.Get(a) {
		t.Error("two clients for one sandbox")
	}
	if cs.Get(a) == cs.Get(b) {
		t.Error("two sandboxes share a client")
	}
	rotated := *a
	rotated.Token = "t3"
	if cs.Get(&rotated) == cs.Get(a) {
		t.Error("a new token reuses the old client")
	}
	before := cs.Get(a)
	cs.Forget("a")
	if cs.Get(a) == before {
		t.Error("Forget kept the client")
	}
	if cs.Get(b) == nil {
		t.Error("Forget dropped another sandbox's client")
	}
}
