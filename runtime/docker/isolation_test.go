package docker

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/runtimetest"
	"github.com/drydockhq/drydock/toolbox"
)

// TestProbeFromInside runs a probe the way an agent runs a command (through
// toolboxd) and checks what TestSecurityDefaults does not: which mounts the
// sandbox has, that /proc and /sys cannot be written, that the kernel
// keyring, ptrace of the sandbox's own daemon and init, new namespaces,
// mounts and setuid programs give nothing.
func TestProbeFromInside(t *testing.T) {
	t.Parallel()
	forRealImage(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		sb, tc := withToolbox(t, s, rt, tightLimits)
		var out, errOut lockedBuffer
		r, err := tc.Exec(t.Context(), toolbox.ExecRequest{Args: []string{"python3", "-c", runtimetest.ProbeScript}}, &out, &errOut)
		if err != nil || r.ExitCode != 0 {
			t.Fatalf("probe: %+v %v\nstderr: %s", r, err, errOut.String())
		}
		probe := runtimetest.ParseProbe(t, out.String(), errOut.String())
		// The socket dir is the one host directory in the sandbox, sealed
		// once toolboxd listens: CheckProbe requires every write there
		// refused, and the probe must have tried.
		if got, ok := probe.BoundWrites[toolboxDir]; !ok {
			t.Errorf("the probe tried no writes in %s", toolboxDir)
		} else {
			t.Logf("writes in %s: %v", toolboxDir, got)
		}
		runtimetest.CheckProbe(t, probe, runtimetest.ProbeOptions{
			Volumes: []string{"/workspace", "/tmp", "/home/agent"},
			Volume: func(m runtimetest.ProbeMount) error {
				if m.FSType != "tmpfs" {
					return errors.New("want a tmpfs")
				}
				return nil
			},
			// The engine's per-container files and its init binary, bound
			// in read-only or owned by root, and toolboxd's socket dir
			// (sealed: no writes).
			Bound:    []string{"/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/run/.containerenv", "/usr/sbin/docker-init", "/run/podman-init", toolboxDir},
			Required: []string{toolboxDir},
			Inits:    []string{"docker-init", "tini", "catatonit", "podman-init"},
			GVisor:   s.gvisor,
		})

		// The engine agrees: the only bind mount is toolboxd's socket dir.
		inspect, err := rt.Client().ContainerInspect(t.Context(), sb.ID, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range inspect.Container.Mounts {
			if m.Type == "bind" && m.Destination == toolboxDir {
				continue
			}
			if m.Type != "tmpfs" {
				t.Errorf("mount from the host: %s %s -> %s", m.Type, m.Source, m.Destination)
			}
		}
	})
}

// attackLimits are tightLimits with room in the workspace for 20,000 small
// files (a page each on tmpfs) and memory for them.
var attackLimits = drydock.Resources{
	CPUs:           0.5,
	MemoryBytes:    256 << 20,
	PidsLimit:      64,
	WorkspaceBytes: 96 << 20,
	TmpBytes:       8 << 20,
}

// withToolbox creates a ready sandbox with limits and a toolbox client for
// it, closed when the test ends.
func withToolbox(t *testing.T, s setup, rt *Runtime, limits drydock.Resources) (*drydock.Sandbox, *toolbox.Client) {
	t.Helper()
	sb := secureWith(t, s, rt, limits)
	tc := toolbox.New(sb.Endpoint, sb.Token)
	t.Cleanup(tc.Close)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := tc.WaitReady(ctx); err != nil {
		t.Fatalf("sandbox not ready: %v", err)
	}
	return sb, tc
}

// TestResourceAttacksThroughToolboxd runs attacks the way an agent's
// commands would, through toolboxd, in a sandbox with half a CPU: a CPU
// spin, a 200 MiB output flood through exec and through a session, and
// 20,000 files listed and downloaded as a tar. During each, a second
// sandbox's toolboxd and the host are timed; the figures are logged, and
// only a generous bound is checked (timings belong in benchmarks). The
// attacked toolboxd must answer throughout, with bounded memory.
func TestResourceAttacksThroughToolboxd(t *testing.T) {
	t.Parallel()
	forRealImage(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		attacker, atc := withToolbox(t, s, rt, attackLimits)
		_, btc := withToolbox(t, s, rt, tightLimits)
		ctx := t.Context()
		toolboxdPid := hostToolboxdPid(t, rt, attacker.ID)

		// during runs attack while timing a command through the
		// bystander's toolboxd and a process start on the host.
		during := func(name string, attack func()) {
			t.Helper()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var sandboxLat, hostLat []time.Duration
			var sandboxErrs []error
			sample := func(lat *[]time.Duration, call func() error) {
				for {
					select {
					case <-stop:
						return
					default:
					}
					start := time.Now()
					if err := call(); err != nil {
						sandboxErrs = append(sandboxErrs, err)
					} else {
						*lat = append(*lat, time.Since(start))
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			wg.Go(func() {
				sample(&sandboxLat, func() error {
					cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					defer cancel()
					r, err := btc.Exec(cctx, toolbox.ExecRequest{Args: []string{"true"}}, io.Discard, io.Discard)
					if err == nil && r.ExitCode != 0 {
						err = fmt.Errorf("true exited %d", r.ExitCode)
					}
					return err
				})
			})
			var hostErrs []error
			wg.Go(func() {
				sample(&hostLat, func() error {
					if err := exec.CommandContext(ctx, "true").Run(); err != nil {
						hostErrs = append(hostErrs, err)
					}
					return nil
				})
			})
			halted := false
			halt := func() {
				if !halted {
					halted = true
					close(stop)
					wg.Wait()
				}
			}
			defer halt() // when the attack fails the test
			start := time.Now()
			attack()
			elapsed := time.Since(start)
			halt()
			t.Logf("%s (%.1f s): another sandbox's toolboxd exec: %s; host process start: %s",
				name, elapsed.Seconds(), percentiles(sandboxLat), percentiles(hostLat))
			for _, err := range append(sandboxErrs, hostErrs...) {
				t.Errorf("%s: a call failed during the attack: %v", name, err)
			}
			for what, lat := range map[string][]time.Duration{"another sandbox's toolboxd": sandboxLat, "the host": hostLat} {
				if p95 := percentile(lat, 0.95); len(lat) == 0 || p95 > 2*time.Second {
					t.Errorf("%s: %s answered %d times, p95 %s; want p95 under 2 s", name, what, len(lat), p95)
				}
			}
			if err := atc.Health(ctx); err != nil {
				t.Errorf("%s: the attacked toolboxd does not answer: %v", name, err)
			}
		}

		during("idle", func() { time.Sleep(3 * time.Second) })

		// CPU: four spinning processes for 5 s under half a CPU.
		cpu0 := containerStats(t, rt, attacker.ID).cpu
		spinStart := time.Now()
		during("cpu spin", func() {
			r, err := atc.Exec(ctx, toolbox.ExecRequest{Command: "for i in 1 2 3 4; do timeout 5 yes >/dev/null & done; wait"}, io.Discard, io.Discard)
			if err != nil || r.ExitCode != 0 {
				t.Errorf("cpu spin: %+v %v", r, err)
			}
		})
		used, wall := containerStats(t, rt, attacker.ID).cpu-cpu0, time.Since(spinStart)
		t.Logf("cpu spin: the sandbox used %.2f CPU-seconds in %.1f s (limit %.1f CPU)", used.Seconds(), wall.Seconds(), attackLimits.CPUs)
		if limit := time.Duration(attackLimits.CPUs*float64(wall)) + time.Second; used > limit {
			t.Errorf("cpu spin used %s of CPU in %s; the limit allows %s", used, wall, limit)
		}

		// Output flood through exec: toolboxd streams it, all of it, with
		// back-pressure from the caller.
		const flood = 200 << 20
		during("exec flood", func() {
			var n countingWriter
			start := time.Now()
			r, err := atc.Exec(ctx, toolbox.ExecRequest{Command: "head -c 200M /dev/zero", Timeout: drydock.Duration(5 * time.Minute)}, &n, io.Discard)
			if err != nil || r.ExitCode != 0 || n != flood {
				t.Errorf("exec flood: %+v %v; %d bytes of %d arrived", r, err, n, flood)
			}
			t.Logf("exec flood: %d MiB in %.1f s", n>>20, time.Since(start).Seconds())
		})

		// Output flood through a session: each reply is capped, the
		// whole output goes to a file in the workspace until it is full.
		during("session flood", func() {
			sess, err := atc.CreateSession(ctx, toolbox.SessionRequest{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := atc.Run(ctx, sess.ID, toolbox.RunRequest{Command: "head -c 200M /dev/zero | tr '\\0' x", Timeout: drydock.Duration(5 * time.Minute)})
			replies, biggest := 1, 0
			for err == nil {
				biggest = max(biggest, len(res.Output))
				if !res.Running {
					break
				}
				res, err = atc.Run(ctx, sess.ID, toolbox.RunRequest{})
				replies++
			}
			if err != nil {
				t.Fatalf("session flood: %v", err)
			}
			t.Logf("session flood: %d replies, the biggest %d bytes; %d bytes counted, exit %d, truncated %t, kept in %q",
				replies, biggest, res.OutputBytes, res.ExitCode, res.Truncated, res.OutputPath)
			if res.ExitCode != 0 || res.OutputBytes != flood || !res.Truncated {
				t.Errorf("session flood: exit %d, %d bytes counted, truncated %t; want 0, %d, true", res.ExitCode, res.OutputBytes, res.Truncated, flood)
			}
			// The workspace (96 MiB) cannot hold 200 MiB: the reply says
			// the output could not be saved rather than pointing at a
			// partial file.
			if res.OutputPath == "" && !strings.Contains(res.Output, "could not be saved") {
				t.Errorf("session flood: no output file and no word why: %q", res.Output[:min(len(res.Output), 300)])
			}
			if biggest > 2*30000 {
				t.Errorf("a reply carried %d bytes of output; the default cap is 30000", biggest)
			}
			if _, err := atc.Exec(ctx, toolbox.ExecRequest{Command: "rm -rf /workspace/.drydock/outputs"}, io.Discard, io.Discard); err != nil {
				t.Errorf("removing the saved output: %v", err)
			}
		})
		var rss, hwm int64
		switch {
		case toolboxdPid != 0:
			rss, hwm = hostVmKB(t, toolboxdPid, "VmRSS"), hostVmKB(t, toolboxdPid, "VmHWM")
		case s.gvisor:
			// The host sees gVisor's sentry, not toolboxd: ask gVisor's
			// kernel, whose /proc shows the sandbox's processes.
			r := sh(ctx, t, rt.Client(), attacker.ID, `for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = toolboxd ] && grep -E '^Vm(RSS|HWM):' $p/status; done`)
			for line := range strings.Lines(r.stdout) {
				k, v, _ := strings.Cut(line, ":")
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				if k == "VmRSS" {
					rss = kb
				} else {
					hwm = kb
				}
			}
			if hwm == 0 && rss != 0 {
				// gVisor reports no peak: the use after the floods
				// stands for it, a weaker bound.
				t.Log("gVisor reports no VmHWM: toolboxd's resident memory after the floods bounds it instead")
				hwm = rss
			}
			if hwm == 0 {
				t.Errorf("toolboxd's memory could not be read inside the sandbox: %+v", r)
			}
		}
		if hwm != 0 {
			t.Logf("toolboxd after the floods: RSS %d MiB, peak %d MiB", rss>>10, hwm>>10)
			if hwm > 200<<10 {
				t.Errorf("toolboxd's memory peaked at %d MiB during the floods; want it bounded under 200 MiB", hwm>>10)
			}
		}

		// Thousands of files: made, listed with depth, downloaded as a tar.
		during("20,000 files", func() {
			start := time.Now()
			r, err := atc.Exec(ctx, toolbox.ExecRequest{Args: []string{"python3", "-c", `
import os
for d in range(100):
    os.makedirs("/workspace/many/d%02d" % d)
for i in range(20000):
    with open("/workspace/many/d%02d/f%05d.txt" % (i % 100, i), "w") as f:
        f.write("x")
`}, Timeout: drydock.Duration(5 * time.Minute)}, io.Discard, io.Discard)
			if err != nil || r.ExitCode != 0 {
				t.Fatalf("making the files: %+v %v", r, err)
			}
			made := time.Since(start)
			start = time.Now()
			list, err := atc.ListDepth(ctx, "many", 2)
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			listed := time.Since(start)
			if !list.Truncated || len(list.Entries) == 0 {
				t.Errorf("listing 20,100 entries: %d entries, truncated %t; want a truncated listing", len(list.Entries), list.Truncated)
			}
			start = time.Now()
			rc, err := atc.DownloadTar(ctx, "many")
			if err != nil {
				t.Fatalf("download: %v", err)
			}
			files, size := 0, int64(0)
			tr := tar.NewReader(rc)
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("tar after %d files: %v", files, err)
				}
				if h.Typeflag == tar.TypeReg {
					files++
					size += h.Size
				}
			}
			rc.Close()
			if files != 20000 || size != 20000 {
				t.Errorf("the tar holds %d files of %d bytes; want 20000 of 1 byte", files, size)
			}
			t.Logf("20,000 files: made in %.1f s, listed (%d entries, truncated %t) in %.2f s, downloaded as a tar in %.1f s",
				made.Seconds(), len(list.Entries), list.Truncated, listed.Seconds(), time.Since(start).Seconds())
			start = time.Now()
			if err := atc.Delete(ctx, "many", true); err != nil {
				t.Errorf("delete: %v", err)
			}
			t.Logf("20,000 files: deleted in %.1f s", time.Since(start).Seconds())
		})

		if toolboxdPid != 0 && hostToolboxdPid(t, rt, attacker.ID) != toolboxdPid {
			t.Error("toolboxd was restarted during the attacks")
		}
		inspect, err := rt.Client().ContainerInspect(ctx, attacker.ID, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st := inspect.Container.State; st == nil || !st.Running || st.OOMKilled {
			t.Errorf("the attacked sandbox after the attacks: %+v", st)
		}
	})
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

func percentile(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(lat))
	return s[max(0, min(int(p*float64(len(s))+0.5)-1, len(s)-1))]
}

func percentiles(lat []time.Duration) string {
	if len(lat) == 0 {
		return "no answer"
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return fmt.Sprintf("n=%d p50 %.1f ms p95 %.1f ms max %.1f ms", len(lat),
		ms(percentile(lat, 0.5)), ms(percentile(lat, 0.95)), ms(percentile(lat, 1)))
}

type stats struct {
	cpu    time.Duration
	memory uint64
}

// containerStats is the sandbox's CPU time and memory as its engine counts
// them.
func containerStats(t *testing.T, rt *Runtime, id string) stats {
	t.Helper()
	st, err := rt.Client().ContainerStats(t.Context(), id, client.ContainerStatsOptions{Stream: false})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Body.Close()
	var v struct {
		CPUStats struct {
			CPUUsage struct {
				TotalUsage uint64 `json:"total_usage"`
			} `json:"cpu_usage"`
		} `json:"cpu_stats"`
		MemoryStats struct {
			Usage uint64 `json:"usage"`
		} `json:"memory_stats"`
	}
	if err := json.NewDecoder(st.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return stats{cpu: time.Duration(v.CPUStats.CPUUsage.TotalUsage), memory: v.MemoryStats.Usage}
}

// hostToolboxdPid is toolboxd's pid as the host sees it (a child of the
// engine's init), or 0 when the engine's processes are not visible from
// here (another pid namespace, a remote engine).
func hostToolboxdPid(t *testing.T, rt *Runtime, id string) int {
	t.Helper()
	inspect, err := rt.Client().ContainerInspect(t.Context(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	init := inspect.Container.State.Pid
	children, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", init, init))
	if err != nil {
		t.Logf("the engine's processes are not visible from the host (%v): toolboxd's memory is not measured", err)
		return 0
	}
	for _, c := range strings.Fields(string(children)) {
		if comm, _ := os.ReadFile("/proc/" + c + "/comm"); strings.TrimSpace(string(comm)) == "toolboxd" {
			pid, _ := strconv.Atoi(c)
			return pid
		}
	}
	t.Logf("toolboxd is not a child of the engine's init %d (children %q): its memory is not measured", init, children)
	return 0
}

// hostVmKB reads a memory figure of a process, in KiB, from the host's /proc.
func hostVmKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("toolboxd's status: %v", err)
	}
	kb, _ := strconv.ParseInt(strings.TrimSuffix(statusField(string(status), field), " kB"), 10, 64)
	return kb
}

// glibc's posix_spawn, system() and popen() start programs in every kind
// of sandbox: they go through clone3 first, and a seccomp answer glibc
// does not fall back from (runsc's with --oci-seccomp) breaks them, and
// with them the code kernel and every tool that shells out.
func TestSpawnWorksInEverySandbox(t *testing.T) {
	t.Parallel()
	forRealImage(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		_, tc := withToolbox(t, s, rt, tightLimits)
		var out, errOut lockedBuffer
		script := "import os; pid = os.posix_spawn('/bin/true', ['true'], {}); print(os.waitpid(pid, 0)[1], os.system('true'), os.popen('echo hi').read().strip())"
		r, err := tc.Exec(t.Context(), toolbox.ExecRequest{Args: []string{"python3", "-c", script}}, &out, &errOut)
		if err != nil || r.ExitCode != 0 || strings.TrimSpace(out.String()) != "0 0 hi" {
			t.Fatalf("posix_spawn, system, popen: %+v %v: %q %q", r, err, out.String(), errOut.String())
		}
	})
}
