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
	"github.com/drydockhq/drydock/toolbox"
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

func info(sb *drydock.Sandbox, token string) error {
	c := toolbox.New(sb.Endpoint, token)
	defer c.Close()
	_, err := c.Info(context.Background())
	return err
}

func TestClaimGivesTheJobItsOwnSecrets(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		warm := warmSandbox(t, rt, toolboxdImage(t, s.host))
		job := "job-" + drydock.RandomHex(4)

		sb, err := rt.Claim(t.Context(), warm.ID, job)
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		if sb.Token == warm.Token || sb.VNCPassword == warm.VNCPassword || sb.Token == "" || sb.VNCPassword == "" {
			t.Error("the job got the pool's secrets")
		}
		if err := info(sb, warm.Token); drydock.ErrorCode(err) != drydock.EUNAUTHORIZED {
			t.Errorf("the pool's token after the claim: %v, want unauthorized", err)
		}
		if err := info(sb, sb.Token); err != nil {
			t.Errorf("the job's token: %v", err)
		}
		// The workspace the job gets is empty.
		if out := sh(t.Context(), t, rt.Client(), sb.ID, "ls -A /workspace"); out.exit != 0 || strings.TrimSpace(out.stdout) != "" {
			t.Errorf("workspace at claim: %+v", out)
		}

		// A restarted orchestrator (a new Runtime over the same state dir)
		// finds the job's secrets and the job.
		again := s.newRuntime(t)
		got, err := again.Get(t.Context(), sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Token != sb.Token || got.VNCPassword != sb.VNCPassword || got.Labels[drydock.LabelJob] != job {
			t.Errorf("Get after the claim: job %q, secrets of the job: %v", got.Labels[drydock.LabelJob], got.Token == sb.Token && got.VNCPassword == sb.VNCPassword)
		}
		list, err := again.List(t.Context(), map[string]string{drydock.LabelJob: job})
		if err != nil || len(list) != 1 || list[0].ID != sb.ID {
			t.Errorf("List by the claiming job: %v, %v", list, err)
		}
		data, err := os.ReadFile(filepath.Join(rt.stateDir, sb.ID, "secrets.json"))
		if err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(filepath.Join(rt.stateDir, sb.ID, "secrets.json")); fi.Mode().Perm() != 0o600 {
			t.Errorf("secrets file mode %v, want 0600", fi.Mode().Perm())
		}
		if strings.Contains(string(data), warm.Token) {
			t.Error("the secrets file still holds the pool's token")
		}

		if _, err := again.Claim(t.Context(), sb.ID, "job-other"); drydock.ErrorCode(err) != drydock.ECONFLICT {
			t.Errorf("second claim: %v, want conflict", err)
		}
		if err := info(sb, sb.Token); err != nil {
			t.Errorf("the refused second claim broke the job's token: %v", err)
		}
	})
}

func TestClaimRefusesAUsedSandbox(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		warm := warmSandbox(t, rt, toolboxdImage(t, s.host))
		c := toolbox.New(warm.Endpoint, warm.Token)
		defer c.Close()
		if err := c.WriteFile(t.Context(), "left-by-someone", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Claim(t.Context(), warm.ID, "job-"+drydock.RandomHex(4)); drydock.ErrorCode(err) != drydock.ECONFLICT {
			t.Errorf("claim of a used workspace: %v, want conflict", err)
		}
		got, err := rt.Get(t.Context(), warm.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Token != warm.Token || got.Labels[drydock.LabelJob] != "pool:test" {
			t.Error("a refused claim changed the sandbox's secrets or job")
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
