package toolbox_test

import (
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

func TestPoolKeepsOneClientPerSandbox(t *testing.T) {
	t.Parallel()
	p := toolbox.NewPool()
	a := &drydock.Sandbox{ID: "a", Endpoint: drydock.Endpoint{Network: "unix", Address: "/x.sock"}, Token: "t1"}
	b := &drydock.Sandbox{ID: "b", Endpoint: drydock.Endpoint{Network: "unix", Address: "/y.sock"}, Token: "t2"}
	if p.Get(a) != p.Get(a) {
		t.Error("two clients for one sandbox")
	}
	if p.Get(a) == p.Get(b) {
		t.Error("two sandboxes share a client")
	}
	rotated := *a
	rotated.Token = "t3"
	if p.Get(&rotated) == p.Get(a) {
		t.Error("a new token reuses the old client")
	}
	before := p.Get(a)
	p.Forget("a")
	if p.Get(a) == before {
		t.Error("Forget kept the client")
	}
	if p.Get(b) == nil {
		t.Error("Forget dropped another sandbox's client")
	}
}
