package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/runtimetest"
)

// warmSandbox starts a sandbox on the toolboxd test image as a pool would
// (no job yet) and waits until toolboxd answers.
func warmSandbox(t *testing.T, rt *Runtime, img string) *drydock.Sandbox {
	t.Helper()
	sb, err := rt.Create(t.Context(), drydock.SandboxSpec{
		JobID: "pool:test", Image: img,
		Env:       map[string]string{"TOOLBOXD_SERVICES": "none"},
		Resources: drydock.Resources{MemoryBytes: 256 << 20, WorkspaceBytes: 64 << 20, TmpBytes: 32 << 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Destroy(context.Background(), sb.ID) })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := runtimetest.WaitHealthy(ctx, sb); err != nil {
		t.Fatalf("toolboxd of %s does not answer: %v", sb.ID, err)
	}
	return sb
}

// The Claim contract (runtimetest's Claim cases) holds for Docker through
// the conformance suite; this is what is Docker's own: the workspace a job
// gets is empty, and the job's secrets are kept on the host (0600, the
// pool's gone), which is how a restarted orchestrator finds them.
func TestClaimKeepsTheJobsSecretsOnTheHost(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		warm := warmSandbox(t, rt, toolboxdImage(t, s.host))
		sb, err := rt.Claim(t.Context(), warm.ID, "job-"+drydock.RandomHex(4))
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		if out := sh(t.Context(), t, rt.Client(), sb.ID, "ls -A /workspace"); out.exit != 0 || strings.TrimSpace(out.stdout) != "" {
			t.Errorf("workspace at claim: %+v", out)
		}
		file := filepath.Join(rt.stateDir, sb.ID, "secrets.json")
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
			t.Errorf("secrets file mode %v, want 0600", fi.Mode().Perm())
		}
		if strings.Contains(string(data), warm.Token) || !strings.Contains(string(data), sb.Token) {
			t.Error("the secrets file holds the pool's token, or not the job's")
		}
	})
}

// BenchmarkClaim: the claim of a warm sandbox (toolboxd test image) until
// the job's token is in place, which is what a warm start costs the runner
// before its readiness check.
func BenchmarkClaim(b *testing.B) {
	forEngineBench(b, func(b *testing.B, s setup) {
		rt := s.newRuntime(b)
		img := toolboxdImage(b, s.host)
		var lat []time.Duration
		for b.Loop() {
			b.StopTimer()
			sb, err := rt.Create(b.Context(), drydock.SandboxSpec{JobID: "pool:bench", Image: img, Env: map[string]string{"TOOLBOXD_SERVICES": "none"}})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
			err = runtimetest.WaitHealthy(ctx, sb)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			if _, err := rt.Claim(b.Context(), sb.ID, "bench-"+drydock.RandomHex(4)); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
			b.StopTimer()
			if err := rt.Destroy(context.Background(), sb.ID); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		reportPercentiles(b, lat)
	})
}
