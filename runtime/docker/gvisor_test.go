package docker

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/runtimetest"
	"github.com/drydockhq/drydock/toolbox"
)

// requireRunsc skips unless the Docker engine at host has gVisor's runsc
// registered as the runtime "runsc" (scripts/testenv/docker-up.sh
// registers it).
func requireRunsc(t testing.TB, host string) {
	t.Helper()
	cli, err := client.New(client.WithHost(host))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	info, err := cli.Info(t.Context(), client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := info.Info.Runtimes["runsc"]; !ok {
		t.Skipf("the engine at %s has no runtime named runsc (scripts/testenv/docker-up.sh builds gVisor's runsc and registers it)", host)
	}
}

// requireDefaultRunsc skips unless the engine at host runs its containers
// under gVisor's runsc by default (a Podman service for gVisor).
func requireDefaultRunsc(t testing.TB, host string) {
	t.Helper()
	cli, err := client.New(client.WithHost(host))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	info, err := cli.Info(t.Context(), client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Info.DefaultRuntime != "runsc" {
		t.Skipf("the engine at %s runs containers under %q by default, not gVisor's runsc", host, info.Info.DefaultRuntime)
	}
}

// The runtime conformance suite with the sandboxes under gVisor (issue
// 17): the real image, OCIRuntime runsc on Docker, and the Podman service
// whose default runtime is runsc. A sandbox's kernel
// answers as gVisor's (its syslog is gVisor's boot log), which tells that
// the engine did not fall back to runc.
func TestConformanceUnderGVisor(t *testing.T) {
	t.Parallel()
	img := os.Getenv("DRYDOCK_TEST_IMAGE")
	if img == "" {
		t.Skip("DRYDOCK_TEST_IMAGE is not set; build one with drydock image build")
	}
	forKinds(t, func(t *testing.T, s setup) {
		if !s.gvisor {
			t.Skip("under runc: TestConformanceRealImage")
		}
		s.image = img
		t.Run("kernel", func(t *testing.T) {
			rt := s.newRuntime(t)
			sb, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "gvisor-" + drydock.RandomHex(4), Image: img})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Destroy(t.Context(), sb.ID)
			c := toolbox.New(sb.Endpoint, sb.Token)
			defer c.Close()
			var out bytes.Buffer
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
				out.Reset()
				res, err := c.Exec(t.Context(), toolbox.ExecRequest{Command: "cat /proc/version"}, &out, &out)
				if err == nil && res.ExitCode == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("exec in the gVisor sandbox: %v %q", err, out.String())
				}
			}
			if !strings.Contains(out.String(), "gvisor") {
				t.Fatalf("the sandbox's kernel is not gVisor's:\n%s", out.String())
			}
		})
		t.Run("conformance", func(t *testing.T) {
			runtimetest.Run(t, func(t *testing.T) drydock.Runtime { return s.newRuntime(t) }, runtimetest.Options{Image: img, ReadyTimeout: time.Minute})
		})
	})
}

// TestOneCallMemoryBombUnderGVisor is the memory bomb toolboxd's guard
// cannot stop: one system call (a 512 MiB read into one buffer) that
// allocates past the engine's headroom before the guard's kill can land,
// since gVisor's kernel acts on the kill only once the call returns. The
// host's OOM killer then ends gVisor's sentry, so the whole sandbox, as a
// VM that runs out of memory ends. What must hold is that it stays inside:
// another sandbox and the host keep working, and the engine can remove it.
func TestOneCallMemoryBombUnderGVisor(t *testing.T) {
	t.Parallel()
	forKinds(t, func(t *testing.T, s setup) {
		if !s.gvisor {
			t.Skip("under runc the kernel's OOM killer ends the bomb itself (TestBombsStayInside)")
		}
		s.image = runtimetest.CurrentImage(t, s.host)
		rt := s.newRuntime(t)
		bomb := secure(t, s, rt)
		bystander := secure(t, s, rt)
		cli := rt.Client()
		ctx := t.Context()

		start := time.Now()
		r, err := tryExec(ctx, cli, bomb.ID, "dd", "if=/dev/zero", "of=/dev/null", "bs=512M", "count=1")
		t.Logf("one-call bomb after %.1f s: %+v %v", time.Since(start).Seconds(), r, err)
		if err == nil && r.exit == 0 {
			t.Errorf("a 512 MiB allocation succeeded under a 128 MiB limit: %+v", r)
		}
		if err := runtimetest.Probe(ctx, bomb); err != nil {
			inspect, ierr := cli.ContainerInspect(ctx, bomb.ID, client.ContainerInspectOptions{})
			if ierr == nil && inspect.Container.State != nil {
				st := inspect.Container.State
				t.Logf("the bomb's sandbox ended (toolboxd: %v): running %t, exit %d, OOM-killed %t", err, st.Running, st.ExitCode, st.OOMKilled)
			}
		} else {
			t.Log("the bomb's sandbox survived: toolboxd answers")
		}
		if err := runtimetest.Probe(ctx, bystander); err != nil {
			t.Errorf("another sandbox stopped answering: %v", err)
		}
		if r := sh(ctx, t, cli, bystander.ID, "echo ok > /workspace/x && cat /workspace/x"); r.stdout != "ok\n" {
			t.Errorf("another sandbox cannot work: %+v", r)
		}
		if out, err := exec.CommandContext(ctx, "sh", "-c", "for i in 1 2 3 4 5 6 7 8; do true & done; wait; echo ok").Output(); err != nil || string(out) != "ok\n" {
			t.Errorf("the host cannot fork: %v %q", err, out)
		}
	})
}

// --isolation auto picks gVisor wherever the engine offers it (Docker with
// runsc registered; a Podman service whose default runtime is runsc), and
// the sandboxes it then creates run under gVisor's kernel and say so; on
// Podman without it, auto falls back to runc and says how to get gVisor.
func TestAutoIsolationPicksGVisor(t *testing.T) {
	t.Parallel()
	forKinds(t, func(t *testing.T, s setup) {
		if !s.gvisor && s.host != os.Getenv("DRYDOCK_TEST_PODMAN_HOST") {
			t.Skip("Docker offers runsc beside runc: its runc kind is the same engine as docker-gvisor")
		}
		img := testImage(t, s.host)
		rt := setup{host: s.host, image: img}.newRuntime(t)
		iso, fallback, err := rt.ResolveIsolation(t.Context(), ModeAuto, img)
		if err != nil {
			t.Fatal(err)
		}
		if !s.gvisor {
			if iso != drydock.IsolationRunc || !strings.Contains(fallback, "containers.conf") {
				t.Errorf("auto on Podman without gVisor: %q, fallback %q; want runc and how to register runsc", iso, fallback)
			}
			return
		}
		if iso != drydock.IsolationGVisor || fallback != "" {
			t.Fatalf("auto: %q, fallback %q; want gvisor", iso, fallback)
		}
		sb, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "auto-" + drydock.RandomHex(4), Image: img})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Destroy(context.WithoutCancel(t.Context()), sb.ID)
		if sb.Isolation != drydock.IsolationGVisor {
			t.Errorf("the sandbox says isolation %q; want gvisor", sb.Isolation)
		}
		if r := sh(t.Context(), t, rt.Client(), sb.ID, "cat /proc/version"); !strings.Contains(r.stdout, "gvisor") {
			t.Errorf("the sandbox's kernel is not gVisor's: %+v", r)
		}
	})
}

// Under gVisor the sandbox's limits are enforced inside it: the agent's
// processes see RLIMIT_NPROC at the pids limit and toolboxd is told the
// memory limit, while the engine's limits leave room for gVisor's own
// processes. Under runc the engine's limits are the sandbox's, and neither
// is set (RLIMIT_NPROC would count uid 1000 across the host).
func TestLimitsUnderEachIsolation(t *testing.T) {
	t.Parallel()
	forKinds(t, func(t *testing.T, s setup) {
		s.image = testImage(t, s.host)
		rt := s.newRuntime(t)
		sb := secure(t, s, rt)
		inspect, err := rt.Client().ContainerInspect(t.Context(), sb.ID, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hc := inspect.Container.HostConfig
		limits := sh(t.Context(), t, rt.Client(), sb.ID, "grep 'Max processes' /proc/self/limits").stdout
		env := strings.Join(inspect.Container.Config.Env, " ")
		want := gvisorLimits(tightLimits)
		if !s.gvisor {
			want = hostLimits{memory: tightLimits.MemoryBytes, pids: tightLimits.PidsLimit}
		}
		if hc.Memory != want.memory || hc.PidsLimit == nil || *hc.PidsLimit != want.pids {
			t.Errorf("the engine's limits: memory %d, pids %v; want %d, %d", hc.Memory, hc.PidsLimit, want.memory, want.pids)
		}
		if f := strings.Fields(limits); s.gvisor && (len(f) < 4 || f[2] != "64" || f[3] != "64") {
			t.Errorf("RLIMIT_NPROC in the sandbox: %q; want 64 64", limits)
		} else if !s.gvisor && len(f) >= 4 && f[2] == "64" {
			t.Errorf("RLIMIT_NPROC at the pids limit under runc: %q (engine's ulimits %v)", limits, hc.Ulimits)
		}
		if got := strings.Contains(env, EnvMemoryLimit+"=134217728"); got != s.gvisor {
			t.Errorf("toolboxd told the memory limit: %t; want %t (%s)", got, s.gvisor, env)
		}
	})
}
