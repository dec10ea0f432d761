package docker

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// These measure the real image with the real toolboxd; DRYDOCK_TEST_IMAGE
// names it (drydock-sandbox:headless after drydock image build).

func realImage(b *testing.B) string {
	img := os.Getenv("DRYDOCK_TEST_IMAGE")
	if img == "" {
		b.Skip("DRYDOCK_TEST_IMAGE is not set; build the image with drydock image build")
	}
	return img
}

// BenchmarkToolboxReady: Create until toolboxd reports its core (files and
// shell) ready.
func BenchmarkToolboxReady(b *testing.B) {
	img := realImage(b)
	forEngineBench(b, func(b *testing.B, s setup) {
		rt := s.newRuntime(b)
		var lat []time.Duration
		for b.Loop() {
			start := time.Now()
			sb, err := rt.Create(b.Context(), drydock.SandboxSpec{JobID: "bench-" + drydock.RandomHex(4), Image: img})
			if err != nil {
				b.Fatal(err)
			}
			tc := toolbox.New(sb.Endpoint, sb.Token)
			ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
			err = tc.WaitReady(ctx)
			cancel()
			tc.Close()
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

// BenchmarkToolboxExecTrue: `true` through toolboxd, one-shot exec and in a
// persistent shell session, to set beside BenchmarkExecTrue (the engine's
// exec).
func BenchmarkToolboxExecTrue(b *testing.B) {
	img := realImage(b)
	forEngineBench(b, func(b *testing.B, s setup) {
		rt := s.newRuntime(b)
		sb, err := rt.Create(b.Context(), drydock.SandboxSpec{JobID: "bench-" + drydock.RandomHex(4), Image: img})
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Destroy(context.Background(), sb.ID)
		tc := toolbox.New(sb.Endpoint, sb.Token)
		defer tc.Close()
		ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
		defer cancel()
		if err := tc.WaitReady(ctx); err != nil {
			b.Fatal(err)
		}
		b.Run("exec", func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				start := time.Now()
				res, err := tc.Exec(b.Context(), toolbox.ExecRequest{Command: "true"}, io.Discard, io.Discard)
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("exec true: %+v %v", res, err)
				}
				lat = append(lat, time.Since(start))
			}
			reportPercentiles(b, lat)
		})
		b.Run("session", func(b *testing.B) {
			sess, err := tc.CreateSession(b.Context(), toolbox.SessionRequest{})
			if err != nil {
				b.Fatal(err)
			}
			var lat []time.Duration
			for b.Loop() {
				start := time.Now()
				res, err := tc.Run(b.Context(), sess.ID, toolbox.RunRequest{Command: "true"})
				if err != nil || res.Running || res.ExitCode != 0 {
					b.Fatalf("run true: %+v %v", res, err)
				}
				lat = append(lat, time.Since(start))
			}
			reportPercentiles(b, lat)
		})
		b.Run("docker-exec", func(b *testing.B) {
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
	})
}

// BenchmarkIdleMemory reports the memory one idle sandbox of the real image
// uses, toolboxd included, as the engine's stats count it (cgroup usage less
// page cache).
func BenchmarkIdleMemory(b *testing.B) {
	img := realImage(b)
	forEngineBench(b, func(b *testing.B, s setup) {
		rt := s.newRuntime(b)
		sb, err := rt.Create(b.Context(), drydock.SandboxSpec{JobID: "bench-" + drydock.RandomHex(4), Image: img})
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Destroy(context.Background(), sb.ID)
		tc := toolbox.New(sb.Endpoint, sb.Token)
		defer tc.Close()
		ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
		defer cancel()
		if err := tc.WaitReady(ctx); err != nil {
			b.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		var mib float64
		for b.Loop() {
			mib = memoryMiB(b, rt, sb.ID)
		}
		b.ReportMetric(mib, "MiB")
		b.Logf("%s: idle memory %.1f MiB", b.Name(), mib)
	})
}

// memoryMiB is a sandbox's memory as the engine's stats count it (cgroup
// usage less page cache).
func memoryMiB(b *testing.B, rt *Runtime, id string) float64 {
	st, err := rt.Client().ContainerStats(b.Context(), id, client.ContainerStatsOptions{Stream: false})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Body.Close()
	var v struct {
		MemoryStats struct {
			Usage uint64            `json:"usage"`
			Stats map[string]uint64 `json:"stats"`
		} `json:"memory_stats"`
	}
	if err := json.NewDecoder(st.Body).Decode(&v); err != nil {
		b.Fatal(err)
	}
	used := v.MemoryStats.Usage - v.MemoryStats.Stats["cache"] - v.MemoryStats.Stats["inactive_file"]
	if v.MemoryStats.Stats["cache"] == 0 && v.MemoryStats.Stats["inactive_file"] == 0 {
		used = v.MemoryStats.Usage
	}
	return float64(used) / (1 << 20)
}
