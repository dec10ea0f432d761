package pool_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/pool"
	localrt "github.com/drydockhq/drydock/runtime/local"
	"github.com/drydockhq/drydock/toolbox"
)

func Example() {
	dir, _ := os.MkdirTemp("", "pool-example-")
	defer os.RemoveAll(dir)
	rt, _ := localrt.New(localrt.Options{Root: dir, ServerID: "node-1"})
	defer rt.Close()

	p, err := pool.New(pool.Config{
		NodeID: "node-1",
		Size:   map[drydock.Profile]int{drydock.ProfileHeadless: 1},
	}, pool.Deps{
		Runtime: rt,
		Ready: func(ctx context.Context, sb *drydock.Sandbox) error {
			c := toolbox.New(sb.Endpoint, sb.Token)
			defer c.Close()
			return c.WaitReady(ctx)
		},
	})
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	for p.Idle(drydock.ProfileHeadless) == 0 {
		time.Sleep(10 * time.Millisecond)
	}

	spec := drydock.SandboxSpec{JobID: "job-1", Profile: drydock.ProfileHeadless}
	sb, err := p.Claim(ctx, spec)
	if err != nil {
		panic(err)
	}
	if sb == nil { // nothing warm: start one cold
		sb, _ = rt.Create(ctx, spec)
	}
	fmt.Println("job label:", sb.Labels[drydock.LabelJob])

	stop()
	<-done // the pool's remaining warm sandboxes are gone
	rt.Destroy(context.Background(), sb.ID)
	// Output: job label: job-1
}
