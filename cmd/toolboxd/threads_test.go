package main

import "testing"

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
