package docker

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

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
