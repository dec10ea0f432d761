package docker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/runtimetest"
)

// Limits small enough for the bombs to hit them quickly.
var tightLimits = drydock.Resources{
	CPUs:           0.5,
	MemoryBytes:    128 << 20,
	PidsLimit:      64,
	WorkspaceBytes: 16 << 20,
	TmpBytes:       8 << 20,
}

// secure creates a ready sandbox with tight limits on the engine.
func secure(t *testing.T, s setup, rt *Runtime, egress ...string) *drydock.Sandbox {
	t.Helper()
	return secureWith(t, s, rt, tightLimits, egress...)
}

// secureWith creates a ready sandbox with the given limits on the engine,
// destroyed when the test ends.
func secureWith(t *testing.T, s setup, rt *Runtime, limits drydock.Resources, egress ...string) *drydock.Sandbox {
	t.Helper()
	sb, err := rt.Create(t.Context(), drydock.SandboxSpec{
		JobID: "sec-" + drydock.RandomHex(4), Image: s.image, Profile: drydock.ProfileHeadless,
		Resources: limits, Egress: egress,
	})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rt.Destroy(ctx, sb.ID); err != nil {
			t.Errorf("Destroy: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := runtimetest.WaitHealthy(ctx, sb); err != nil {
		t.Fatalf("sandbox not healthy: %v", err)
	}
	return sb
}

func forEngine(t *testing.T, f func(t *testing.T, s setup)) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			s := setup{host: requireEngine(t, e.env)}
			s.image = testImage(t, s.host)
			f(t, s)
		})
	}
}

// forEngineAndImage runs f on the test image and, when DRYDOCK_TEST_IMAGE
// names one, on the real image with the real toolboxd too.
func forEngineAndImage(t *testing.T, f func(t *testing.T, s setup)) {
	forEngine(t, f)
	if img := os.Getenv("DRYDOCK_TEST_IMAGE"); img != "" {
		for _, e := range engines {
			t.Run(e.name+"/real-image", func(t *testing.T) {
				t.Parallel()
				f(t, setup{host: requireEngine(t, e.env), image: img})
			})
		}
	}
}

// forEveryKind is forEngine on every sandbox kind: under gVisor too, with
// the test image.
func forEveryKind(t *testing.T, f func(t *testing.T, s setup)) {
	forKinds(t, func(t *testing.T, s setup) {
		s.image = testImage(t, s.host)
		f(t, s)
	})
}

// forEveryKindAndImage is forEngineAndImage with gVisor's kinds as well.
// Under gVisor the real image carries this tree's toolboxd, which enforces
// the memory limit there (the test image's stand-in does not, and the
// shared image's may be older).
func forEveryKindAndImage(t *testing.T, f func(t *testing.T, s setup)) {
	forEngineAndImage(t, f)
	for _, k := range sandboxKinds {
		if !k.gvisor {
			continue
		}
		t.Run(k.name+"/real-image", func(t *testing.T) {
			t.Parallel()
			s := k.require(t)
			s.image = runtimetest.CurrentImage(t, s.host)
			f(t, s)
		})
	}
}

// TestSecurityDefaults checks from inside a running sandbox what the design
// promises: who it runs as, what it may do, where it may write and what it
// can reach.
func TestSecurityDefaults(t *testing.T) {
	t.Parallel()
	forEngineAndImage(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		sb := secure(t, s, rt)
		cli := rt.Client()
		ctx := t.Context()
		run := func(script string) execResult { return sh(ctx, t, cli, sb.ID, script) }

		if r := run("id -u; id -g"); r.exit != 0 || strings.Fields(r.stdout)[0] != "1000" || strings.Fields(r.stdout)[1] != "1000" {
			t.Errorf("id: %+v, want uid and gid 1000", r)
		}

		status := run("cat /proc/self/status").stdout
		for field, want := range map[string]string{
			"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
			"CapBnd": "0000000000000000", "CapAmb": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2",
		} {
			if got := statusField(status, field); got != want {
				t.Errorf("/proc/self/status %s = %q, want %q", field, got, want)
			}
		}

		for _, path := range []string{"/probe", "/usr/probe", "/etc/probe", "/usr/local/bin/toolboxd"} {
			if r := run("echo x > " + path); r.exit == 0 {
				t.Errorf("wrote %s on the read-only root", path)
			}
		}
		for _, dir := range []string{"/workspace", "/tmp", "/home/agent"} {
			if r := run("echo x > " + dir + "/probe && cat " + dir + "/probe"); r.exit != 0 || r.stdout != "x\n" {
				t.Errorf("%s not writable: %+v", dir, r)
			}
		}
		// Programs built in the workspace must run: tmpfs defaults to noexec.
		if r := run("cp /bin/true /workspace/true && /workspace/true"); r.exit != 0 {
			t.Errorf("cannot execute in /workspace: %+v", r)
		}

		// Filling a size-limited filesystem fails with ENOSPC at its size.
		for dir, limit := range map[string]int64{"/workspace": tightLimits.WorkspaceBytes, "/tmp": tightLimits.TmpBytes} {
			r := run(fmt.Sprintf("dd if=/dev/zero of=%s/fill bs=1M count=%d 2>&1; stat -c %%s %s/fill", dir, 2*limit>>20, dir))
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			size, _ := strconv.ParseInt(lines[len(lines)-1], 10, 64)
			if !strings.Contains(r.stdout, "No space left") || size > limit || size < limit/2 {
				t.Errorf("filling %s (limit %d): size %d, output %q", dir, limit, size, r.stdout)
			}
			run("rm -f " + dir + "/fill")
		}

		if r := run("ls /sys/class/net"); strings.Fields(r.stdout) == nil || !slices.Equal(strings.Fields(r.stdout), []string{"lo"}) {
			t.Errorf("network interfaces %q, want only lo", r.stdout)
		}

		// The only sockets in the sandbox are toolboxd's own and those of the
		// services it runs privately (the kernel's and the VNC server's, under
		// its 0700 runtime directory /tmp/drydock); no engine socket is
		// mounted anywhere.
		r := run("find / -path /proc -prune -o -path /sys -prune -o -type s -print 2>/dev/null")
		got := strings.Fields(r.stdout)
		if !slices.Contains(got, "/run/toolbox/toolboxd.sock") {
			t.Errorf("toolboxd's socket is missing: %v", got)
		}
		for _, sock := range got {
			if sock != "/run/toolbox/toolboxd.sock" && !strings.HasPrefix(sock, "/tmp/drydock/") && !strings.HasPrefix(sock, "/tmp/.X11-unix/") {
				t.Errorf("unexpected socket in the sandbox: %s (all: %v)", sock, got)
			}
		}
		if r := run("stat -c %a /tmp/drydock 2>/dev/null"); r.stdout != "" && strings.TrimSpace(r.stdout) != "700" {
			t.Errorf("toolboxd's runtime dir has mode %q, want 700", r.stdout)
		}
		if m := run("cat /proc/mounts").stdout; strings.Contains(m, "docker.sock") || strings.Contains(m, "podman.sock") {
			t.Errorf("an engine socket is mounted:\n%s", m)
		}

		// The limits the engine enforces, as it reports them.
		inspect, err := cli.ContainerInspect(ctx, sb.ID, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hc := inspect.Container.HostConfig
		if hc.Memory != tightLimits.MemoryBytes || hc.PidsLimit == nil || *hc.PidsLimit != tightLimits.PidsLimit ||
			hc.NanoCPUs != int64(tightLimits.CPUs*1e9) || !hc.ReadonlyRootfs || hc.Privileged {
			t.Errorf("host config: memory %d pids %v cpus %d readonly %t privileged %t; want %+v",
				hc.Memory, hc.PidsLimit, hc.NanoCPUs, hc.ReadonlyRootfs, hc.Privileged, tightLimits)
		}
		if string(hc.NetworkMode) != "none" {
			t.Errorf("network mode %q, want none", hc.NetworkMode)
		}
	})
}

// A spec that allows egress still gets no network interface: the egress
// proxy is the only way out (see egress_test.go).
func TestEgressKeepsNoNetwork(t *testing.T) {
	t.Parallel()
	forEveryKind(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		sb := secure(t, s, rt, "example.com:443")
		if ifs := interfaces(t, rt, sb.ID); !slices.Equal(ifs, []string{"lo"}) {
			t.Errorf("interfaces with egress: %q, want lo only", ifs)
		}
		r := sh(t.Context(), t, rt.Client(), sb.ID, "echo $HTTPS_PROXY $NO_PROXY")
		if r.stdout != "http://127.0.0.1:3128 localhost,127.0.0.1,::1\n" {
			t.Errorf("proxy environment: %q", r.stdout)
		}
	})
}

// interfaces lists the sandbox's network interfaces as its kernel does in
// /proc/net/dev (gVisor has no /sys/class/net).
func interfaces(t *testing.T, rt *Runtime, id string) []string {
	t.Helper()
	r := sh(t.Context(), t, rt.Client(), id, "cat /proc/net/dev")
	var ifs []string
	for line := range strings.Lines(r.stdout) {
		if name, _, ok := strings.Cut(line, ":"); ok && !strings.Contains(name, "|") {
			ifs = append(ifs, strings.TrimSpace(name))
		}
	}
	if len(ifs) == 0 {
		t.Fatalf("no interfaces in /proc/net/dev: %+v", r)
	}
	return ifs
}

// TestBombsStayInside runs a memory bomb, a fork bomb and a disk filler in
// one sandbox and checks that each hits its limit while a second sandbox and
// the host keep working.
func TestBombsStayInside(t *testing.T) {
	t.Parallel()
	forEveryKindAndImage(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		bomb := secure(t, s, rt)
		bystander := secure(t, s, rt)
		cli := rt.Client()
		ctx := t.Context()

		// Memory: one 512 MiB allocation in a 128 MiB sandbox is killed.
		memoryBomb := "dd if=/dev/zero of=/dev/null bs=512M count=1"
		if s.gvisor {
			// Under gVisor toolboxd's guard enforces the limit between
			// the agent's system calls: one call that allocates past the
			// engine's headroom outruns it and ends the sandbox
			// (TestOneCallMemoryBombUnderGVisor). This bomb grows as most
			// do, a mebibyte a call.
			memoryBomb = "python3 -c 'b = []\nwhile True: b.append(bytearray(1 << 20))'"
		}
		r := sh(ctx, t, cli, bomb.ID, memoryBomb)
		if r.exit == 0 {
			t.Errorf("a 512 MiB allocation succeeded under a 128 MiB limit: %+v", r)
		}
		t.Logf("memory bomb: exit %d %s", r.exit, strings.TrimSpace(r.stderr))
		if err := runtimetest.Probe(ctx, bomb); err != nil {
			t.Errorf("toolboxd died with the memory bomb: %v", err)
		}

		// Disk: writing 64 MiB into the 16 MiB workspace stops at 16 MiB.
		r = sh(ctx, t, cli, bomb.ID, "while :; do cat /dev/zero > /workspace/f$RANDOM || break; done 2>/dev/null; du -sk /workspace | cut -f1")
		if kb, _ := strconv.Atoi(strings.TrimSpace(r.stdout)); kb > int(tightLimits.WorkspaceBytes>>10) || kb == 0 {
			t.Errorf("disk filler wrote %s KiB into a %d KiB workspace", strings.TrimSpace(r.stdout), tightLimits.WorkspaceBytes>>10)
		}
		// tmpfs pages count against the memory limit: free them, or the
		// next bomb runs with 16 MiB less room and the OOM killer may pick
		// toolboxd (see docs/ARCHITECTURE.md, known limits).
		sh(ctx, t, cli, bomb.ID, "rm -f /workspace/f*")

		// Processes: 500 background sleeps against a limit of 64. ash gives
		// up at the first refused fork, so the bomb runs in a child shell;
		// the count and the tally use builtins only, which need no process.
		// The sleeps end by themselves and the init reaps them.
		r = sh(ctx, t, cli, bomb.ID, `sh -c 'i=0; while [ $i -lt 500 ]; do sleep 3 & i=$((i+1)); done' 2>/tmp/forkerr
set -- /proc/[0-9]*; echo $#
{ read -r cur </sys/fs/cgroup/pids/pids.current || read -r cur </sys/fs/cgroup/pids.current; } 2>/dev/null; echo ${cur:-0}
n=0; while read -r line; do case "$line" in *fork*) n=$((n+1));; esac; done </tmp/forkerr; echo $n`)
		fields := strings.Fields(r.stdout)
		if len(fields) != 3 {
			t.Fatalf("fork bomb output %q (stderr %q, exit %d)", r.stdout, r.stderr, r.exit)
		}
		peak, _ := strconv.Atoi(fields[0])
		tasks, _ := strconv.Atoi(fields[1])
		failed, _ := strconv.Atoi(fields[2])
		// Threads count against the limit too (toolboxd keeps a reserve
		// of them), so the processes alone stay well below it; the
		// cgroup's task count shows the limit reached.
		t.Logf("fork bomb: %d processes and %d tasks at its peak (limit %d), %d forks refused", peak, tasks, tightLimits.PidsLimit, failed)
		if peak > int(tightLimits.PidsLimit) || tasks > int(tightLimits.PidsLimit) {
			t.Errorf("%d processes, %d tasks in the sandbox at the peak; the limit is %d", peak, tasks, tightLimits.PidsLimit)
		}
		if tasks != 0 && tasks < int(tightLimits.PidsLimit)-8 {
			t.Errorf("%d tasks in the sandbox at the peak, want close to the limit of %d", tasks, tightLimits.PidsLimit)
		}
		if failed == 0 {
			t.Error("no fork was refused: the pids limit did not bite")
		}

		// The bystander and the host are unaffected.
		if err := runtimetest.Probe(ctx, bystander); err != nil {
			t.Errorf("another sandbox stopped answering during the bombs: %v", err)
		}
		if r := sh(ctx, t, cli, bystander.ID, "echo ok > /workspace/x && cat /workspace/x"); r.stdout != "ok\n" {
			t.Errorf("another sandbox cannot work during the bombs: %+v", r)
		}
		if out, err := exec.CommandContext(ctx, "sh", "-c", "for i in 1 2 3 4 5 6 7 8; do true & done; wait; echo ok").Output(); err != nil || string(out) != "ok\n" {
			t.Errorf("the host cannot fork during the bombs: %v %q", err, out)
		}
		// Once its processes have ended, the bomb's sandbox works again.
		deadline := time.Now().Add(20 * time.Second)
		for {
			err := runtimetest.Probe(ctx, bomb)
			if err == nil {
				if r, err := tryExec(ctx, cli, bomb.ID, "sh", "-c", "echo ok"); err == nil && r.stdout == "ok\n" {
					break
				} else {
					t.Logf("exec after the bombs: %+v %v", r, err)
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the bomb sandbox did not recover within 20 s: %v", err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	})
}

func statusField(status, field string) string {
	for line := range strings.Lines(status) {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
