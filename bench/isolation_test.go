package bench

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The sentry's command line may carry spaces and parentheses; the stat
// line's fields are counted from the last ')'.
func TestStatLineParsesParentOfOddCommands(t *testing.T) {
	t.Parallel()
	p, ok := parseStatLine("4245 (exe) S 4225 4245 4225 0 -1 4194560")
	if !ok || p.ppid != 4225 || p.comm != "exe" {
		t.Errorf("plain: %+v %v", p, ok)
	}
	p, ok = parseStatLine("77 (a) b (c)) R 12 77 1")
	if !ok || p.ppid != 12 || p.comm != "a) b (c)" {
		t.Errorf("parentheses in the command: %+v %v", p, ok)
	}
	for _, bad := range []string{"", "12 no-parens S 1", "12 (x)", "12 (x) S notanumber"} {
		if _, ok := parseStatLine(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// runsc's shim starts the gofer and the sentry side by side, and the
// sentry starts its own helpers: all are the sandbox's, the shim and its
// neighbours are not.
func TestContainerProcsAreTheShimsDescendants(t *testing.T) {
	t.Parallel()
	procs := map[int]proc{
		1:   {0, "init"},
		50:  {1, "containerd-shim"},
		51:  {50, "exe"}, // gofer
		52:  {50, "exe"}, // sentry: the container's pid
		53:  {52, "exe"}, // systrap stub
		54:  {53, "exe"},
		60:  {1, "containerd-shim"}, // another container
		61:  {60, "exe"},
		70:  {1, "dockerd"},
		700: {70, "exe"},
	}
	got := containerProcs(procs, 52)
	slices.Sort(got)
	if !slices.Equal(got, []int{51, 52, 53, 54}) {
		t.Errorf("under a shim: %v, want the gofer, the sentry and its helpers", got)
	}
	// No shim above (an engine that runs the container directly): the
	// container's process and its descendants.
	got = containerProcs(procs, 700)
	if !slices.Equal(got, []int{700}) {
		t.Errorf("without a shim: %v", got)
	}
}

func TestRollupIsReadInBytes(t *testing.T) {
	t.Parallel()
	r := parseRollup("55d0-7ff [rollup]\nRss:  26532 kB\nPss:  10912 kB\nPss_Anon: 5560 kB\nPss_Shmem: 0 kB\nbogus\n")
	if r["Pss"] != 10912<<10 || r["Pss_Anon"] != 5560<<10 || r["Rss"] != 26532<<10 {
		t.Errorf("%v", r)
	}
	if _, ok := r["Pss_Shmem"]; !ok {
		t.Error("a zero field must still be read")
	}
}

// The host's cost is never the cheaper of the two accountings: a gVisor
// sandbox whose memory file is charged elsewhere shows in its PSS, a runc
// sandbox's tmpfs in its cgroup; processes outside the cgroup add to it.
func TestHostMemoryTakesTheLargerAccountingPlusShim(t *testing.T) {
	t.Parallel()
	gv := HostMemory{Cgroup: Memory{Used: 90 << 20}, ProcessMem: 190 << 20, Shim: 4 << 20}
	if gv.Host() != 194<<20 {
		t.Errorf("PSS above the cgroup: %d MiB", gv.Host()>>20)
	}
	runc := HostMemory{Cgroup: Memory{Used: 70 << 20}, ProcessMem: 60 << 20, Shim: 5 << 20}
	if runc.Host() != 75<<20 {
		t.Errorf("cgroup above the PSS: %d MiB", runc.Host()>>20)
	}
	outside := HostMemory{Cgroup: Memory{Used: 50 << 20}, ProcessMem: 60 << 20, OutsidePss: 30 << 20}
	if outside.Host() != 80<<20 {
		t.Errorf("a gofer outside the cgroup: %d MiB", outside.Host()>>20)
	}
}

// The isolation table pairs each measure's runc and gVisor figures on one
// engine, gives the ratio, and says why a column is empty.
func TestCompareGivesRatioAndSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	r := NewReport("test", "drydock bench isolation", nil)
	r.Add(
		Result{Name: "isolation.cold_start", Engine: "docker", Mode: "runc", Unit: "ms", Dist: &Dist{N: 3, P50: 200, P95: 300}},
		Result{Name: "isolation.cold_start", Engine: "docker", Mode: "gvisor", Unit: "ms", Dist: &Dist{N: 3, P50: 300, P95: 600}},
		Result{Name: "isolation.density", Engine: "docker", Mode: "runc", Unit: "sandboxes", Value: ptr(300)},
		Result{Name: "isolation.density", Engine: "docker", Mode: "gvisor", Unit: "sandboxes", Value: ptr(150)},
		Result{Name: "isolation.cold_start", Engine: "podman", Mode: "runc", Unit: "ms", Dist: &Dist{N: 3, P50: 250, P95: 350}},
		Result{Name: "isolation.cold_start", Engine: "podman", Mode: "gvisor", Unavailable: "the Podman service's default runtime is not gVisor"},
		Result{Name: "isolation.first_kernel", Engine: "docker", Mode: "runc", Error: "kernel died"},
		Result{Name: "isolation.first_kernel", Engine: "docker", Mode: "gvisor", Unit: "ms", Dist: &Dist{N: 1, P50: 900, P95: 900}},
		Result{Name: "sandbox.ready", Engine: "docker", Mode: "core", Unit: "ms", Dist: &Dist{N: 1, P50: 1}},
	)
	r.Finish(Targets, []string{"isolation"})
	got := map[string]Comparison{}
	for _, c := range r.Comparisons {
		got[c.Measure+"|"+c.Engine+"|"+c.Stat] = c
	}
	if len(got) != 7 {
		t.Errorf("rows: %+v", r.Comparisons)
	}
	check := func(key string, runc, gv, ratio float64) {
		t.Helper()
		c := got[key]
		if c.Runc == nil || c.GVisor == nil || c.Ratio == nil || *c.Runc != runc || *c.GVisor != gv || *c.Ratio != ratio || c.Missing != "" {
			t.Errorf("%s: %+v", key, c)
		}
	}
	check("isolation.cold_start|docker|p50", 200, 300, 1.5)
	check("isolation.cold_start|docker|p95", 300, 600, 2)
	check("isolation.density|docker|value", 300, 150, 0.5)
	if c := got["isolation.cold_start|podman|p50"]; c.GVisor != nil || c.Ratio != nil || !strings.Contains(c.Missing, "gvisor: the Podman service") {
		t.Errorf("unavailable gVisor: %+v", c)
	}
	if c := got["isolation.first_kernel|docker|p50"]; c.Runc != nil || c.Ratio != nil || c.Missing != "runc failed: kernel died" {
		t.Errorf("failed runc: %+v", c)
	}
	if _, ok := got["sandbox.ready|docker|p50"]; ok {
		t.Error("a measure of another kind is in the isolation table")
	}
	var md bytes.Buffer
	r.Markdown(&md)
	for _, want := range []string{"| measure | engine | stat | runc | gVisor | gVisor / runc | unit |", "| isolation.cold_start | docker | p50 | 200 | 300 | 1.50× | ms |", "| isolation.cold_start | podman | p50 | 250 | — | — | ms [1] |", "| isolation.cold_start | podman | p95 | 350 | — | — | ms [1] |", "[1] gvisor: the Podman service's default runtime is not gVisor\n", "[2] runc failed: kernel died\n"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

func TestIsolationIdleIsBounded(t *testing.T) {
	t.Parallel()
	base := Options{N: 1, RoundTrips: 1, ArchiveMiB: 1, DensityMax: 1, AgentSteps: 2}
	for _, n := range []int{-1, maxIsolationIdle + 1} {
		o := base
		o.IsolationIdle = n
		if _, err := New(o, "test", "x"); err == nil || !strings.Contains(err.Error(), "--isolation-idle") {
			t.Errorf("%d idle sandboxes: %v", n, err)
		}
	}
	s, err := New(base, "test", "x")
	if err != nil || s.opts.IsolationIdle != 3 {
		t.Errorf("default: %v %+v", err, s)
	}
}

// gVisor's memory file is counted by its resident pages, once, however
// many descriptors of it its processes hold.
func TestMemfdResidentCountsEachFileOnce(t *testing.T) {
	before, err := memfdResident([]int{os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.MemfdCreate("bench-test", 0)
	if err != nil {
		t.Skipf("memfd_create: %v", err)
	}
	f := os.NewFile(uintptr(fd), "memfd")
	defer f.Close()
	page := os.Getpagesize()
	// 4 pages written in a file of 16: 4 resident.
	if err := f.Truncate(int64(16 * page)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{1}, 4*page), 0); err != nil {
		t.Fatal(err)
	}
	dup, err := syscall.Dup(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(dup)
	after, err := memfdResident([]int{os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if got := after - before; got != int64(4*page) {
		t.Errorf("resident in the memfd: %d bytes, want %d (4 pages, counted once)", got, 4*page)
	}
}
