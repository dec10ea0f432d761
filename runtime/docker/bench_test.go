package docker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/runtimetest"
)

// Benchmarks, not timed tests: run them with
//
//	go test -run '^$' -bench . -benchtime 20x ./runtime/docker/
//
// against the engines scripts/testenv starts. Each reports p50 and p95 in
// milliseconds besides the mean.

// benchImages returns the images to measure on an engine: the tiny test
// image, and the real headless image when drydock image build has made it.
func benchImages(b *testing.B, s setup) map[string]string {
	imgs := map[string]string{"test": testImage(b, s.host)}
	rt := s.newRuntime(b)
	if _, err := rt.Client().ImageInspect(b.Context(), "drydock-sandbox:headless"); err == nil {
		imgs["headless"] = "drydock-sandbox:headless"
	} else if !cerrdefs.IsNotFound(err) {
		b.Fatal(err)
	}
	return imgs
}

func forEngineBench(b *testing.B, f func(b *testing.B, s setup)) {
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			f(b, setup{host: requireEngine(b, e.env)})
		})
	}
}

// BenchmarkCreateReady: Create until toolboxd answers its health check.
func BenchmarkCreateReady(b *testing.B) {
	forEngineBench(b, func(b *testing.B, s setup) {
		imgs := benchImages(b, s)
		for _, name := range []string{"test", "headless"} {
			img, ok := imgs[name]
			if !ok {
				continue
			}
			b.Run(name, func(b *testing.B) {
				rt := s.newRuntime(b)
				var lat []time.Duration
				for b.Loop() {
					start := time.Now()
					sb, err := rt.Create(b.Context(), drydock.SandboxSpec{JobID: "bench-" + drydock.RandomHex(4), Image: img})
					if err != nil {
						b.Fatal(err)
					}
					ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
					err = runtimetest.WaitHealthy(ctx, sb)
					cancel()
					lat = append(lat, time.Since(start))
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					if err := rt.Destroy(context.Background(), sb.ID); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				reportPercentiles(b, lat)
			})
		}
	})
}

// BenchmarkBareRun is the floor to compare with: create, start and wait for a
// container that runs /bin/true with no network, like `docker run --rm
// --network none IMAGE true`, without any of the sandbox's setup.
func BenchmarkBareRun(b *testing.B) {
	forEngineBench(b, func(b *testing.B, s setup) {
		img := testImage(b, s.host)
		cli := s.newRuntime(b).Client()
		var lat []time.Duration
		for b.Loop() {
			start := time.Now()
			c, err := cli.ContainerCreate(b.Context(), client.ContainerCreateOptions{
				Config:     &container.Config{Image: img, Entrypoint: []string{"/bin/true"}},
				HostConfig: &container.HostConfig{NetworkMode: "none"},
			})
			if err != nil {
				b.Fatal(err)
			}
			wait := cli.ContainerWait(b.Context(), c.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
			if _, err := cli.ContainerStart(b.Context(), c.ID, client.ContainerStartOptions{}); err != nil {
				b.Fatal(err)
			}
			select {
			case <-wait.Result:
			case err := <-wait.Error:
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
			b.StopTimer()
			if _, err := cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		reportPercentiles(b, lat)
	})
}

// BenchmarkExecTrue: the engine's exec API running `true` in a ready sandbox,
// the round trip toolboxd's own exec is measured against.
func BenchmarkExecTrue(b *testing.B) {
	forEngineBench(b, func(b *testing.B, s setup) {
		img := testImage(b, s.host)
		rt := s.newRuntime(b)
		sb, err := rt.Create(b.Context(), drydock.SandboxSpec{JobID: "bench-" + drydock.RandomHex(4), Image: img})
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Destroy(context.Background(), sb.ID)
		ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
		defer cancel()
		if err := runtimetest.WaitHealthy(ctx, sb); err != nil {
			b.Fatal(err)
		}
		var lat []time.Duration
		for b.Loop() {
			start := time.Now()
			r, err := tryExec(b.Context(), rt.Client(), sb.ID, "true")
			if err != nil || r.exit != 0 {
				b.Fatalf("exec true: %+v %v", r, err)
			}
			lat = append(lat, time.Since(start))
		}
		reportPercentiles(b, lat)
	})
}

// BenchmarkHealthRoundTrip: one GET /v1/health over the sandbox's unix
// socket, a new connection each time: the transport's floor for toolboxd
// calls.
func BenchmarkHealthRoundTrip(b *testing.B) {
	forEngineBench(b, func(b *testing.B, s setup) {
		rt := s.newRuntime(b)
		sb, err := rt.Create(b.Context(), drydock.SandboxSpec{JobID: "bench-" + drydock.RandomHex(4), Image: testImage(b, s.host)})
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Destroy(context.Background(), sb.ID)
		ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
		defer cancel()
		if err := runtimetest.WaitHealthy(ctx, sb); err != nil {
			b.Fatal(err)
		}
		var lat []time.Duration
		for b.Loop() {
			start := time.Now()
			if err := runtimetest.Probe(b.Context(), sb); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		reportPercentiles(b, lat)
	})
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		i := int(p*float64(len(lat))+0.5) - 1
		return float64(lat[max(0, min(i, len(lat)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.95), "p95-ms")
	b.Logf("%s: n=%d p50 %s p95 %s max %s", b.Name(), len(lat),
		fmtMS(pct(0.50)), fmtMS(pct(0.95)), fmtMS(float64(lat[len(lat)-1])/float64(time.Millisecond)))
}

func fmtMS(ms float64) string { return fmt.Sprintf("%.1f ms", ms) }
