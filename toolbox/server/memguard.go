package server

import (
	"bufio"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// The memory guard is the sandbox's OOM killer where its kernel has none
// that binds it. Under gVisor the host's memory cgroup sees only gVisor's
// sentry, which holds all of the sandbox's memory: a memory bomb made the
// host's OOM killer end the sentry, so the whole sandbox, toolboxd with it;
// and gVisor's own memory cgroup reports use but enforces no limit. So
// toolboxd watches the use and, at the sandbox's limit, ends the process the
// kernel's OOM killer would (the most resident memory, weighted by
// oom_score_adj, which toolboxd sets to 1000 for what it starts), never
// itself; the engine's limit is set above the sandbox's (runtime/docker
// gvisorLimits), so the guard acts first.

// Poll intervals: idle well below the limit, and closer as the use nears
// it, where an allocation loop gains tens of MiB between polls (reading the
// use costs gVisor's kernel some microseconds). The engine's headroom
// covers what the guard lets through, a busy machine's delays included.
const (
	guardIdlePoll = 50 * time.Millisecond
	guardHalfPoll = 10 * time.Millisecond // above half the limit
	guardNearPoll = 2 * time.Millisecond  // above three quarters, and after a kill
	// guardVictimWait bounds how long the guard waits for its last victim
	// to be gone before it picks another.
	guardVictimWait = 2 * time.Second
	// guardSettle is how long the use may take to fall once the victim is
	// gone: gVisor gives freed pages back in the background, so a use
	// still over the limit just after is no reason to end a second process.
	guardSettle = 250 * time.Millisecond
)

// guard enforces limit on the use usage reads.
type guard struct {
	limit int64
	usage func() (int64, bool)
	procs string // the proc filesystem: "/proc"
	self  int
	kill  func(pid int) error
	log   *slog.Logger

	kills atomic.Int64

	// victim is the last process ended, until the use is below the limit
	// again or it had its time (guardVictimWait, then guardSettle from
	// when it was gone).
	victim       int
	killed, gone time.Time
}

func newGuard(limit int64, cgroup string, log *slog.Logger) *guard {
	// The file is chosen once: the guard reads it every 2 ms near the
	// limit, and a failing open of the other version's file each time
	// would double that.
	file := filepath.Join(cgroup, "memory.usage_in_bytes") // v1
	if _, err := os.Stat(file); err != nil {
		file = filepath.Join(cgroup, "memory.current") // v2
	}
	usage := func() (int64, bool) { return readInt(file) }
	return &guard{
		limit: limit, usage: usage, procs: "/proc", self: os.Getpid(), log: log,
		kill: func(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) },
	}
}

// run checks the use until stop closes.
func (g *guard) run(stop <-chan struct{}) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		t.Reset(g.check(time.Now()))
	}
}

// check reads the use once, ends a process if it is at the limit, and says
// when to look again.
func (g *guard) check(now time.Time) time.Duration {
	usage, ok := g.usage()
	if !ok {
		return guardIdlePoll
	}
	if usage < g.limit {
		g.victim = 0
		switch {
		case usage >= g.limit/4*3:
			return guardNearPoll
		case usage >= g.limit/2:
			return guardHalfPoll
		}
		return guardIdlePoll
	}
	if g.victim != 0 {
		if g.alive(g.victim) && now.Sub(g.killed) < guardVictimWait {
			return guardNearPoll
		}
		if g.gone.IsZero() {
			g.gone = now
		}
		if now.Sub(g.gone) < guardSettle {
			return guardNearPoll
		}
		g.victim = 0
	}
	pid, rss := g.pick()
	if pid == 0 {
		g.log.Warn("memory limit reached and no process to end", "usage", usage, "limit", g.limit)
		return guardIdlePoll
	}
	if err := g.kill(pid); err != nil {
		g.log.Warn("memory limit reached; ending a process failed", "pid", pid, "err", err)
		return guardNearPoll
	}
	g.kills.Add(1)
	g.victim, g.killed, g.gone = pid, now, time.Time{}
	g.log.Warn("memory limit reached: process ended", "pid", pid, "comm", g.comm(pid), "rss", rss, "usage", usage, "limit", g.limit)
	return guardNearPoll
}

// pick chooses the process to end as the kernel's OOM killer does: the
// most resident memory plus oom_score_adj thousandths of the limit;
// processes at -1000, toolboxd itself and the container's init never.
func (g *guard) pick() (pid int, rss int64) {
	entries, err := os.ReadDir(g.procs)
	if err != nil {
		return 0, 0
	}
	best := int64(-1 << 62)
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == g.self || p == 1 {
			continue
		}
		r, ok := g.rss(p)
		if !ok || r == 0 { // gone, a zombie, or no memory of its own
			continue
		}
		adj, _ := readInt(filepath.Join(g.procs, e.Name(), "oom_score_adj"))
		if adj <= -1000 {
			continue
		}
		if points := r + adj*(g.limit/1000); points > best {
			best, pid, rss = points, p, r
		}
	}
	return pid, rss
}

// rss is a process's resident memory in bytes (VmRSS).
func (g *guard) rss(pid int) (int64, bool) {
	f, err := os.Open(filepath.Join(g.procs, strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, true // no VmRSS: a zombie
}

// alive says whether pid still holds memory.
func (g *guard) alive(pid int) bool {
	r, ok := g.rss(pid)
	return ok && r > 0
}

func (g *guard) comm(pid int) string {
	b, _ := os.ReadFile(filepath.Join(g.procs, strconv.Itoa(pid), "comm"))
	return strings.TrimSpace(string(b))
}
