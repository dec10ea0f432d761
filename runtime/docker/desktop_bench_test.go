package docker

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

func desktopImage(b *testing.B) string {
	img := os.Getenv("DRYDOCK_TEST_IMAGE_DESKTOP")
	if img == "" {
		b.Skip("DRYDOCK_TEST_IMAGE_DESKTOP is not set; build it with drydock image build --profile desktop")
	}
	return img
}

// BenchmarkDesktopSandbox measures, per created desktop sandbox: create →
// VNC usable (display and VNC ready) and create → first Python result. Idle
// memory is `drydock bench density`'s, which reads the sandbox's cgroup the
// same way on Docker and Podman (Podman's stats API has no cache fields).
func BenchmarkDesktopSandbox(b *testing.B) {
	img := desktopImage(b)
	forEngineBench(b, func(b *testing.B, s setup) {
		rt := s.newRuntime(b)
		var vnc, python []time.Duration
		for b.Loop() {
			start := time.Now()
			sb, err := rt.Create(b.Context(), drydock.SandboxSpec{JobID: "bench-" + drydock.RandomHex(4), Image: img, Profile: drydock.ProfileDesktop})
			if err != nil {
				b.Fatal(err)
			}
			tc := toolbox.New(sb.Endpoint, sb.Token)
			ctx, cancel := context.WithTimeout(b.Context(), 2*time.Minute)
			if err := tc.WaitReady(ctx, "display", "vnc"); err != nil {
				b.Fatal(err)
			}
			vnc = append(vnc, time.Since(start))
			res, err := tc.RunCode(ctx, toolbox.CodeRequest{Language: "python", Code: "print(6*7)"})
			if err != nil || res.Error || len(res.Outputs) == 0 || !strings.Contains(res.Outputs[0].Text, "42") {
				b.Fatalf("first python: %+v %v", res, err)
			}
			python = append(python, time.Since(start))
			cancel()
			b.StopTimer()
			tc.Close()
			if err := rt.Destroy(context.Background(), sb.ID); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.Logf("%s: create → VNC usable", b.Name())
		reportPercentiles(b, vnc)
		b.Logf("%s: create → first Python result", b.Name())
		reportPercentiles(b, python)
	})
}
