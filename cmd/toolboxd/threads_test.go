package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drydockhq/drydock/toolbox"
)

// The thread reserve is sized from the sandbox's task limit wherever it is
// set: the pids cgroup under runc, RLIMIT_NPROC under gVisor (whose cgroups
// say "max"); an unlimited or distro-default RLIMIT_NPROC is no limit.
func TestTasksLimit(t *testing.T) {
	for _, c := range []struct {
		cgroup int
		nproc  uint64
		want   int
	}{
		{64, 0, 64},
		{64, ^uint64(0), 64}, // RLIM_INFINITY
		{0, 64, 64},          // gVisor: the runtime's RLIMIT_NPROC
		{0, 1 << 20, 0},      // gVisor's default: no limit
		{1024, 4096, 1024},   // runc under a host-wide RLIMIT_NPROC
		{0, 0, 0},            // nothing known
		{1024, 256, 256},     // the lower binds
	} {
		if got := tasksLimit(c.cgroup, c.nproc); got != c.want {
			t.Errorf("tasksLimit(%d, %d) = %d; want %d", c.cgroup, c.nproc, got, c.want)
		}
	}
}

// envTasksChild marks the test binary re-executed with $TOOLBOXD_TASKS_LIMIT
// set, which TestMain applies as main does.
const envTasksChild = "DRYDOCK_TEST_TOOLBOXD_TASKS_CHILD"

// $TOOLBOXD_TASKS_LIMIT becomes toolboxd's RLIMIT_NPROC, soft and hard, so
// every command and shell it starts inherits it and none may raise it (the
// Kubernetes runtime's limit under gVisor), and the thread reserve is sized
// from it. The limit is far above what this machine's uid runs, so that the
// test binary is not refused threads where it does not run as root.
func TestTasksLimitBindsEveryCommand(t *testing.T) {
	const limit = "54321"
	if os.Getenv(envTasksChild) == "" {
		t.Parallel()
		cmd := exec.Command(os.Args[0], "-test.run=^TestTasksLimitBindsEveryCommand$", "-test.v")
		cmd.Env = append(os.Environ(), envTasksChild+"=1", envTasksLimit+"="+limit)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("with $%s=%s: %v\n%s", envTasksLimit, limit, err, out)
		}
		return
	}
	if got := pidsLimit(); got != 54321 {
		t.Errorf("the thread reserve is sized for %d tasks; want %s", got, limit)
	}
	dir := t.TempDir()
	ep, _, stop := start(t, []string{"-listen", "unix://" + filepath.Join(dir, "tb.sock"), "-workspace", dir, "-services", "none"},
		map[string]string{"TOOLBOXD_TOKEN": "nproc-token"})
	defer stop()
	c := toolbox.New(ep, "nproc-token")
	defer c.Close()
	for _, req := range []toolbox.ExecRequest{
		{Args: []string{"grep", "Max processes", "/proc/self/limits"}},
		{Command: "grep 'Max processes' /proc/self/limits"},
	} {
		var out bytes.Buffer
		if _, err := c.Exec(t.Context(), req, &out, &out); err != nil {
			t.Fatal(err)
		}
		// "Max processes  SOFT  HARD  processes"
		if got, want := strings.Fields(out.String()), []string{"Max", "processes", limit, limit, "processes"}; !slices.Equal(got, want) {
			t.Errorf("%+v: the command's RLIMIT_NPROC (soft, hard) is %q; want %q", req, got, want)
		}
	}
}

// A value that cannot be a limit stops toolboxd: a sandbox must not run
// unbounded while its runtime believes it is bounded.
func TestTasksLimitRefusesNonsense(t *testing.T) {
	for _, v := range []string{"lots", "-1", "0", "15", "1e3"} {
		if err := limitTasks(v); err == nil || !strings.Contains(err.Error(), envTasksLimit) {
			t.Errorf("limitTasks(%q) = %v; want an error naming $%s", v, err, envTasksLimit)
		}
	}
	if err := limitTasks(""); err != nil {
		t.Errorf("no limit asked: %v", err)
	}
}
