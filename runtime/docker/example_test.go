package docker_test

import (
	"context"
	"fmt"
	"log"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/docker"
)

// A sandbox for a job on the local Docker (or Podman) socket, reached
// through toolboxd's unix socket with its token, then destroyed.
func Example() {
	ctx := context.Background()
	rt, err := docker.New(docker.Options{Host: "unix:///var/run/docker.sock", ServerID: "node-1"})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	sb, err := rt.Create(ctx, drydock.SandboxSpec{
		JobID:     "job-123",
		Profile:   drydock.ProfileHeadless,
		Resources: drydock.Resources{MemoryBytes: 2 << 30, CPUs: 1},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Destroy(ctx, sb.ID)
	fmt.Println(sb.Endpoint.Network, sb.Endpoint.Address)
}
