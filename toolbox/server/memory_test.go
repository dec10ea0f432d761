package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drydockhq/drydock/toolbox"
)

// fakeCgroup is a memory cgroup directory as the kernel shows it, whose
// OOM kill counter a test (or a command it runs) moves.
type fakeCgroup struct {
	t   *testing.T
	dir string
	v2  bool
}

func newFakeCgroup(t *testing.T, v2 bool, usage, limit int64) *fakeCgroup {
	t.Helper()
	c := &fakeCgroup{t: t, dir: t.TempDir(), v2: v2}
	if v2 {
		c.write("memory.current", fmt.Sprint(usage))
		c.write("memory.max", fmt.Sprint(limit))
	} else {
		c.write("memory.usage_in_bytes", fmt.Sprint(usage))
		c.write("memory.limit_in_bytes", fmt.Sprint(limit))
	}
	c.setKills(0)
	return c
}

func (c *fakeCgroup) write(name, data string) {
	c.t.Helper()
	if err := os.WriteFile(filepath.Join(c.dir, name), []byte(data+"\n"), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// killsScript is the shell code that sets the counter as the kernel would.
func (c *fakeCgroup) killsScript(n int) string {
	if c.v2 {
		return fmt.Sprintf("printf 'low 0\\nhigh 0\\nmax 3\\noom %d\\noom_kill %d\\n' > %s", n, n, shellQuote(filepath.Join(c.dir, "memory.events")))
	}
	return fmt.Sprintf("printf 'oom_kill_disable 0\\nunder_oom 0\\noom_kill %d\\n' > %s", n, shellQuote(filepath.Join(c.dir, "memory.oom_control")))
}

func (c *fakeCgroup) setKills(n int) {
	c.t.Helper()
	if c.v2 {
		c.write("memory.events", fmt.Sprintf("low 0\nhigh 0\nmax 3\noom %d\noom_kill %d", n, n))
	} else {
		c.write("memory.oom_control", fmt.Sprintf("oom_kill_disable 0\nunder_oom 0\noom_kill %d", n))
	}
}

// fullWorkspace is a statfs that shows the workspace as a tmpfs holding
// 1900 MiB of 2048 MiB, as in the red team's run.
func fullWorkspace(ws string) func(string) (toolbox.MountUsage, bool) {
	return func(p string) (toolbox.MountUsage, bool) {
		switch p {
		case ws:
			return toolbox.MountUsage{Path: "/workspace", UsedBytes: 1900 << 20, SizeBytes: 2048 << 20}, true
		case "/tmp":
			return toolbox.MountUsage{Path: "/tmp", UsedBytes: 3 << 20, SizeBytes: 1024 << 20}, true
		}
		return toolbox.MountUsage{}, false
	}
}

func memorySetup(t *testing.T, cg *fakeCgroup) *bundle {
	t.Helper()
	b := setup(t, func(c *Config) {
		c.Memory = MemoryConfig{Cgroup: cg.dir, Mounts: []string{c.Workspace, "/tmp", "/home/agent"}}
	})
	b.srv.mem.statfs = fullWorkspace(b.ws)
	return b
}

// The red team's case: the workspace, a tmpfs charged to the memory limit,
// fills it, and the OOM killer takes the shell. The reply must say that
// memory ran out, where it went, and what to do, not just "exit code -1".
func TestShellKilledForMemorySaysWhy(t *testing.T) {
	t.Parallel()
	for _, v2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("cgroup-v2=%v", v2), func(t *testing.T) {
			t.Parallel()
			cg := newFakeCgroup(t, v2, 2040<<20, 2048<<20)
			b := memorySetup(t, cg)
			b.session("s")
			b.run("s", toolbox.RunRequest{Command: "cd /tmp && export X=1"})
			res := b.run("s", toolbox.RunRequest{Command: cg.killsScript(1) + "; kill -9 $$"})
			if !res.ShellExited || res.ShellEnd != "ended by signal 9 (killed)" {
				t.Errorf("shell end: exited %v %q", res.ShellExited, res.ShellEnd)
			}
			o := res.OutOfMemory
			if o == nil {
				t.Fatalf("no out-of-memory report: %+v", res)
			}
			if o.Kills != 1 || o.LimitBytes != 2048<<20 || o.UsageBytes != 2040<<20 || len(o.Mounts) != 2 {
				t.Errorf("report %+v", o)
			}
			for _, want := range []string{"out of memory", "limit is 2048 MiB", "2040 MiB is in use",
				"/workspace 1900 MiB of 2048 MiB", "/tmp 3 MiB of 1024 MiB", "Free space with rm"} {
				if !strings.Contains(o.Message, want) {
					t.Errorf("message %q lacks %q", o.Message, want)
				}
			}
			// Reported once; the next command runs in a fresh shell the
			// previous reply already announced.
			res = b.run("s", toolbox.RunRequest{Command: "pwd; echo \"[$X]\""})
			if res.OutOfMemory != nil || res.FreshShell || res.Output != b.ws+"\n[]\n" {
				t.Errorf("next command: %+v", res)
			}
		})
	}
}

// The OOM killer also takes idle shells (a background job grew). The next
// command runs in a fresh shell, and its reply says so and why: the model
// would otherwise run in the wrong directory without knowing.
func TestIdleShellLostIsReportedByTheNextCommand(t *testing.T) {
	t.Parallel()
	cg := newFakeCgroup(t, false, 1<<30, 1<<30)
	b := memorySetup(t, cg)
	b.session("s")
	b.run("s", toolbox.RunRequest{Command: "mkdir -p sub && cd sub"})
	pid := b.sessionInfo("s").Pid
	cg.setKills(2)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for b.sessionInfo("s").Pid != 0 {
		time.Sleep(10 * time.Millisecond)
	}
	res := b.run("s", toolbox.RunRequest{Command: "pwd"})
	if !res.FreshShell || res.ShellEnd != "ended by signal 9 (killed)" || res.Output != b.ws+"\n" {
		t.Errorf("command after the shell was lost: %+v", res)
	}
	if res.OutOfMemory == nil || res.OutOfMemory.Kills != 2 || !strings.Contains(res.OutOfMemory.Message, "2 processes") {
		t.Errorf("out-of-memory report %+v", res.OutOfMemory)
	}
	if res := b.run("s", toolbox.RunRequest{Command: "true"}); res.FreshShell || res.OutOfMemory != nil {
		t.Errorf("reported twice: %+v", res)
	}
	// A restart asked for is no loss to report.
	b.ok(http.StatusOK, nil, "POST", "/v1/sessions/s/restart", nil)
	if res := b.run("s", toolbox.RunRequest{Command: "true"}); res.FreshShell {
		t.Errorf("a requested restart reported as a lost shell: %+v", res)
	}
}

func (b *bundle) sessionInfo(id string) toolbox.Session {
	b.t.Helper()
	var all []toolbox.Session
	b.ok(http.StatusOK, &all, "GET", "/v1/sessions", nil)
	for _, s := range all {
		if s.ID == id {
			return s
		}
	}
	b.t.Fatalf("no session %s in %+v", id, all)
	return toolbox.Session{}
}

// oomCode is a code runner whose process the OOM killer takes.
type oomCode struct{ cg *fakeCgroup }

func (c oomCode) Components(context.Context) []toolbox.Component { return nil }
func (c oomCode) Run(context.Context, toolbox.CodeRequest) (*toolbox.CodeResult, error) {
	c.cg.setKills(1)
	return &toolbox.CodeResult{Error: true, Outputs: []toolbox.CodeOutput{{Kind: toolbox.OutputError, Text: "KernelRestarted: the kernel died"}}}, nil
}

func TestCodeKilledForMemorySaysWhy(t *testing.T) {
	t.Parallel()
	cg := newFakeCgroup(t, true, 500<<20, 512<<20)
	b := setup(t, func(c *Config) {
		c.Code = oomCode{cg}
		c.Memory = MemoryConfig{Cgroup: cg.dir}
	})
	var res toolbox.CodeResult
	b.ok(http.StatusOK, &res, "POST", "/v1/code/run", toolbox.CodeRequest{Language: "python", Code: "x = bytearray(1 << 40)"})
	if res.OutOfMemory == nil || !strings.Contains(res.OutOfMemory.Message, "limit is 512 MiB") ||
		!strings.Contains(res.OutOfMemory.Message, "use less memory") {
		t.Errorf("code result %+v", res.OutOfMemory)
	}
	var again toolbox.CodeResult
	b.ok(http.StatusOK, &again, "POST", "/v1/code/run", toolbox.CodeRequest{Language: "python", Code: "1"})
	if again.OutOfMemory != nil {
		t.Errorf("a run without a new kill reports %+v", again.OutOfMemory)
	}
}

func TestOOMMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    toolbox.OutOfMemory
		want []string
		not  []string
	}{
		{"files hold the memory", toolbox.OutOfMemory{Kills: 1, LimitBytes: 2 << 30, UsageBytes: 2 << 30, Mounts: []toolbox.MountUsage{
			{Path: "/workspace", UsedBytes: 1900 << 20, SizeBytes: 2 << 30}, {Path: "/tmp", UsedBytes: 100 << 10, SizeBytes: 1 << 30}}},
			[]string{"ended a process in the sandbox", "limit is 2048 MiB", "Files hold 1900 MiB", "/workspace 1900 MiB of 2048 MiB", "Free space with rm"},
			[]string{"/tmp"}}, // under 1 MiB: not worth naming
		{"processes hold the memory", toolbox.OutOfMemory{Kills: 3, LimitBytes: 1 << 30, UsageBytes: 900 << 20, Mounts: []toolbox.MountUsage{
			{Path: "/workspace", UsedBytes: 20 << 20, SizeBytes: 512 << 20}}},
			[]string{"ended 3 processes", "900 MiB is in use", "/workspace 20 MiB", "Processes used the rest", "use less memory"},
			[]string{"then retry"}},
		{"no tmpfs", toolbox.OutOfMemory{Kills: 1, LimitBytes: 1 << 30, UsageBytes: 1 << 30},
			[]string{"Processes used it", "use less memory"}, []string{"Files"}},
		{"no limit", toolbox.OutOfMemory{Kills: 1},
			[]string{"no memory limit of its own", "the machine ran out of memory"}, []string{"MiB"}},
	}
	for _, tt := range tests {
		got := oomMessage(&tt.o)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tt.name, got, w)
			}
		}
		for _, w := range tt.not {
			if strings.Contains(got, w) {
				t.Errorf("%s: %q has %q", tt.name, got, w)
			}
		}
	}
}

func TestMemorySample(t *testing.T) {
	t.Parallel()
	v1 := newFakeCgroup(t, false, 10<<20, 9223372036854771712) // v1's "no limit"
	v1.setKills(4)
	if s := (&memory{cfg: MemoryConfig{Cgroup: v1.dir}}).sample(); s != (memSample{usage: 10 << 20, kills: 4, ok: true}) {
		t.Errorf("v1 sample %+v", s)
	}
	v2 := newFakeCgroup(t, true, 10<<20, 0)
	v2.write("memory.max", "max")
	v2.setKills(2)
	if s := (&memory{cfg: MemoryConfig{Cgroup: v2.dir}}).sample(); s != (memSample{usage: 10 << 20, kills: 2, ok: true}) {
		t.Errorf("v2 sample %+v", s)
	}
	// A kernel without the counter (before 4.13) reports nothing rather
	// than guessing.
	old := newFakeCgroup(t, false, 1, 2)
	old.write("memory.oom_control", "oom_kill_disable 0\nunder_oom 0")
	m := &memory{cfg: MemoryConfig{Cgroup: old.dir}}
	if s := m.sample(); s.ok || m.since(s, s) != nil {
		t.Errorf("sample without a counter %+v", s)
	}
	if s := (&memory{}).sample(); s.ok {
		t.Errorf("no cgroup configured, yet %+v", s)
	}
}

func TestDetectMemoryCgroup(t *testing.T) {
	t.Parallel()
	mk := func(t *testing.T, files ...string) string {
		root := t.TempDir()
		for _, f := range files {
			p := filepath.Join(root, f)
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte("0\n"), 0o644)
		}
		return root
	}
	proc := func(t *testing.T, data string) string {
		p := filepath.Join(t.TempDir(), "cgroup")
		os.WriteFile(p, []byte(data), 0o644)
		return p
	}
	t.Run("v1 in a container", func(t *testing.T) {
		// The engine mounts the container's own cgroup at the root of the
		// hierarchy; /proc/self/cgroup still names the host's path.
		root := mk(t, "memory/memory.limit_in_bytes")
		if got := detectMemoryCgroup(root, proc(t, "4:memory:/docker/abc\n0::/docker/abc\n")); got != filepath.Join(root, "memory") {
			t.Errorf("got %q", got)
		}
	})
	t.Run("v1 on a host", func(t *testing.T) {
		root := mk(t, "memory/memory.limit_in_bytes", "memory/user/x/memory.limit_in_bytes")
		if got := detectMemoryCgroup(root, proc(t, "5:cpuacct,memory:/user/x\n")); got != filepath.Join(root, "memory/user/x") {
			t.Errorf("got %q", got)
		}
	})
	t.Run("v2", func(t *testing.T) {
		root := mk(t, "memory.current", "pod/memory.current")
		if got := detectMemoryCgroup(root, proc(t, "0::/pod\n")); got != filepath.Join(root, "pod") {
			t.Errorf("got %q", got)
		}
	})
	t.Run("none", func(t *testing.T) {
		if got := detectMemoryCgroup(mk(t), proc(t, "0::/\n")); got != "" {
			t.Errorf("got %q", got)
		}
	})
}

func TestExecKilledForMemorySaysWhy(t *testing.T) {
	t.Parallel()
	cg := newFakeCgroup(t, false, 250<<20, 256<<20)
	b := memorySetup(t, cg)
	r := b.do("POST", "/v1/exec", toolbox.ExecRequest{Command: cg.killsScript(1) + "; kill -9 $$"})
	lines := strings.Split(strings.TrimSpace(string(r.body)), "\n")
	var exit toolbox.ExecFrame
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &exit); err != nil {
		t.Fatal(err)
	}
	if exit.Type != toolbox.FrameExit || exit.ExitCode != -1 || exit.OutOfMemory == nil ||
		!strings.Contains(exit.OutOfMemory.Message, "limit is 256 MiB") {
		t.Errorf("exit frame %+v", exit)
	}
}

// Where toolboxd enforces the limit (gVisor, whose memory cgroup reports use
// but no OOM kills and a limit that is the engine's, above the sandbox's),
// a sample takes the limit and the kills from toolboxd's guard, so replies
// name the sandbox's limit and what the guard ended.
func TestMemorySampleWithTheGuard(t *testing.T) {
	t.Parallel()
	cg := newFakeCgroup(t, false, 130<<20, 400<<20)
	cg.write("memory.oom_control", "oom_kill_disable 0\nunder_oom 0") // no counter, as gVisor's has none at all
	m := &memory{cfg: MemoryConfig{Cgroup: cg.dir}, statfs: func(string) (toolbox.MountUsage, bool) { return toolbox.MountUsage{}, false }}
	m.guard = newGuard(128<<20, cg.dir, nil)
	before := m.sample()
	if before != (memSample{usage: 130 << 20, limit: 128 << 20, ok: true}) {
		t.Fatalf("sample with the guard %+v", before)
	}
	m.guard.kills.Add(1)
	o := m.since(before, m.sample())
	if o == nil || o.Kills != 1 || o.LimitBytes != 128<<20 || !strings.Contains(o.Message, "limit is 128 MiB") {
		t.Fatalf("report after the guard's kill: %+v", o)
	}
}
