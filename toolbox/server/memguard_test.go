package server

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// fakeProcs is a /proc with the processes a test gives it.
type fakeProcs struct {
	t   *testing.T
	dir string
}

// set writes a process: its resident KiB (-1: a zombie, with no VmRSS) and
// its oom_score_adj.
func (f fakeProcs) set(pid int, rssKB int64, adj int) {
	d := filepath.Join(f.dir, strconv.Itoa(pid))
	if err := os.MkdirAll(d, 0o755); err != nil {
		f.t.Fatal(err)
	}
	status := "Name:\tp\n"
	if rssKB >= 0 {
		status += fmt.Sprintf("VmRSS:\t%d kB\n", rssKB)
	}
	os.WriteFile(filepath.Join(d, "status"), []byte(status), 0o644)
	os.WriteFile(filepath.Join(d, "oom_score_adj"), []byte(strconv.Itoa(adj)+"\n"), 0o644)
	os.WriteFile(filepath.Join(d, "comm"), []byte("p\n"), 0o644)
}

func (f fakeProcs) remove(pid int) { os.RemoveAll(filepath.Join(f.dir, strconv.Itoa(pid))) }

func newTestGuard(t *testing.T, limit int64) (*guard, fakeProcs, *int64, *[]int) {
	procs := fakeProcs{t, t.TempDir()}
	usage := new(int64)
	var killed []int
	g := &guard{
		limit: limit, procs: procs.dir, self: 7, log: slog.New(slog.DiscardHandler),
		usage: func() (int64, bool) { return *usage, true },
		kill:  func(pid int) error { killed = append(killed, pid); return nil },
	}
	os.WriteFile(filepath.Join(procs.dir, "meminfo"), nil, 0o644) // not a process
	return g, procs, usage, &killed
}

// At the sandbox's limit the guard ends the process the kernel's OOM killer
// would: the largest of those toolboxd started (oom_score_adj 1000), and
// never toolboxd itself, the container's init or a process at -1000, even
// when they are larger.
func TestMemoryGuardEndsTheLargestAgentProcess(t *testing.T) {
	g, procs, usage, killed := newTestGuard(t, 128<<20)
	procs.set(1, 900<<10, 0)     // init
	procs.set(7, 800<<10, 0)     // toolboxd
	procs.set(9, 700<<10, -1000) // exempt
	procs.set(20, 4<<10, 1000)   // the agent's shell
	procs.set(21, 100<<10, 1000) // the bomb
	procs.set(22, 10<<10, 1000)  // a bystander command
	procs.set(23, -1, 1000)      // a zombie
	procs.set(24, 60<<10, 0)     // a docker exec'd process, smaller
	now := time.Unix(1000, 0)

	*usage = 100 << 20
	g.check(now)
	if len(*killed) != 0 {
		t.Fatalf("below the limit the guard ended %v", *killed)
	}
	*usage = 128 << 20
	g.check(now)
	if !slices.Equal(*killed, []int{21}) {
		t.Fatalf("at the limit the guard ended %v; want the bomb, 21", *killed)
	}
	if g.kills.Load() != 1 {
		t.Errorf("kills counted %d; want 1", g.kills.Load())
	}

	// The victim still holds memory: no second kill, however long the use
	// stays up, until guardVictimWait.
	g.check(now.Add(guardVictimWait / 2))
	// Gone (a zombie), but the use has not fallen yet: gVisor frees pages
	// in the background; wait guardSettle.
	procs.set(21, -1, 1000)
	g.check(now.Add(guardVictimWait/2 + time.Millisecond))
	g.check(now.Add(guardVictimWait/2 + guardSettle/2))
	if !slices.Equal(*killed, []int{21}) {
		t.Fatalf("while its victim was going the guard ended %v", *killed)
	}
	// Still over the limit after that: the next goes, by the kernel's
	// points (the bystander's 10 MiB at 1000 outweighs the exec'd 60 MiB
	// at 0, as it would under runc).
	g.check(now.Add(guardVictimWait/2 + 2*guardSettle))
	if !slices.Equal(*killed, []int{21, 22}) {
		t.Fatalf("then the guard ended %v; want 21, 22", *killed)
	}
}

// A victim that does not go (a kill the guard cannot deliver, say) holds
// the guard back for guardVictimWait only.
func TestMemoryGuardDoesNotWaitForeverOnAVictim(t *testing.T) {
	g, procs, usage, killed := newTestGuard(t, 64<<20)
	procs.set(30, 50<<10, 1000)
	procs.set(31, 20<<10, 1000)
	*usage = 70 << 20
	now := time.Unix(1000, 0)
	g.check(now)
	g.check(now.Add(guardVictimWait - time.Millisecond))
	if !slices.Equal(*killed, []int{30}) {
		t.Fatalf("ended %v; want 30 once", *killed)
	}
	g.check(now.Add(guardVictimWait))
	g.check(now.Add(guardVictimWait + guardSettle))
	if !slices.Equal(*killed, []int{30, 30}) {
		t.Fatalf("ended %v; want 30 again once its time was up", *killed)
	}
	// Below the limit the guard forgets its victim.
	*usage = 10 << 20
	g.check(now.Add(time.Hour))
	if g.victim != 0 {
		t.Errorf("the victim is kept below the limit")
	}
}
