package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Threads toolboxd keeps in reserve, bounded by the sandbox's pids limit.
// The minimum covers what toolboxd needs at once with the agent's processes
// holding every other pid: its concurrent file calls (bounded by the server
// at 8) and a few process starts and runtime threads.
const (
	minSpareThreads = 16
	maxSpareThreads = 32
)

// reserveThreads makes the Go runtime start spare OS threads at launch, on
// top of those it has, and returns how many the process has afterwards.
//
// A fork bomb in the sandbox takes every pid the limit allows, and threads
// count as pids. The Go runtime cannot run without a thread it asks for: if
// it needs one then, toolboxd dies ("failed to create new OS thread") and the
// sandbox with it. The runtime never gives a thread back once it is idle, so
// threads started now stay available to it for the life of the process.
// Goroutines sitting in a blocking system call make the scheduler start a
// new thread for the next runnable one; on a busy machine it may take a few
// rounds to get them all.
func reserveThreads(spare int) int {
	target := threadCount() + spare
	for round := 0; round < 5 && threadCount() < target; round++ {
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range target {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ts := syscall.NsecToTimespec(100e6)
				_ = syscall.Nanosleep(&ts, nil)
			}()
		}
		close(start)
		wg.Wait()
	}
	return threadCount()
}

// spareThreads sizes the reserve: a quarter of the pids limit, within
// bounds, so that a tight limit still leaves most pids to the agent.
func spareThreads() int {
	limit := pidsLimit()
	if limit <= 0 {
		return maxSpareThreads
	}
	return min(max(limit/4, minSpareThreads), maxSpareThreads)
}

// pidsLimit is the number of tasks the sandbox may have: the pids limit of
// toolboxd's cgroup (v2, or v1's pids controller) or, when that has none,
// RLIMIT_NPROC, which is how the docker runtime limits a sandbox under
// gVisor (its kernel counts it per sandbox; its cgroups say "max"); 0 when
// neither limits it.
func pidsLimit() int {
	var rl syscall.Rlimit
	nproc := uint64(0)
	if err := syscall.Getrlimit(rlimitNPROC, &rl); err == nil {
		nproc = rl.Cur
	}
	return tasksLimit(cgroupPidsMax(), nproc)
}

// rlimitNPROC is RLIMIT_NPROC on Linux (syscall names it on no platform).
const rlimitNPROC = 6

// tasksLimit picks the binding limit of the cgroup's (0: none) and
// RLIMIT_NPROC (unlimited or huge: none).
func tasksLimit(cgroup int, nproc uint64) int {
	if nproc == 0 || nproc >= 1<<20 {
		return cgroup
	}
	if cgroup <= 0 || int(nproc) < cgroup {
		return int(nproc)
	}
	return cgroup
}

// cgroupPidsMax reads the pids limit of toolboxd's cgroup; 0 when there is
// none or it cannot be read.
func cgroupPidsMax() int {
	for _, p := range []string{"/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n, err := strconv.Atoi(string(bytes.TrimSpace(b)))
		if err != nil { // "max"
			return 0
		}
		return n
	}
	return 0
}

// threadCount is the number of threads of this process.
func threadCount() int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// envTasksLimit is the number of tasks (processes and threads) the sandbox
// may have, which toolboxd sets as its own RLIMIT_NPROC, soft and hard, at
// start, so that every command, shell and service it starts inherits it
// and none may raise it. runtime/kubernetes sets it for pods under gVisor:
// Kubernetes has no per-pod pids limit or ulimit, and the node's pids limit
// binds gVisor's own threads, not the agent's (see runtime/docker
// gvisorLimits, which asks the engine for the same limit as a ulimit).
// Under runc it must stay unset: the host kernel counts RLIMIT_NPROC per
// uid across the node, every sandbox's uid 1000 together.
const envTasksLimit = "TOOLBOXD_TASKS_LIMIT"

// limitTasks applies $TOOLBOXD_TASKS_LIMIT (v, "" for none) to this
// process. A value it cannot apply is an error: a sandbox must not run
// believing it is bounded when it is not.
func limitTasks(v string) error {
	if v == "" {
		return nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n < 16 {
		return fmt.Errorf("$%s: %q is not a number of tasks (at least 16)", envTasksLimit, v)
	}
	rl := syscall.Rlimit{Cur: n, Max: n}
	if err := syscall.Setrlimit(rlimitNPROC, &rl); err != nil {
		return fmt.Errorf("set RLIMIT_NPROC to $%s (%d): %w", envTasksLimit, n, err)
	}
	return nil
}
