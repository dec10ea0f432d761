package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/moby/client"
)

// HostMemory is what one sandbox costs the host, in bytes, seen from the
// host's side. Under runc the sandbox's processes are host processes in the
// container's cgroup. Under gVisor they are not host processes at all: the
// host runs the sentry (gVisor's kernel, which holds the sandbox's memory
// in a memory file it maps), the gofer (file access) and a few helpers;
// with Docker's runsc they join the container's cgroup, but a runtime may
// leave some outside it, so both the cgroup and the processes are read.
type HostMemory struct {
	// Cgroup is the container's memory cgroup.
	Cgroup Memory `json:"cgroup"`
	// Processes is what the container's host processes hold, the engine's
	// shim excluded: the PSS of their private memory and mapped files (the
	// runsc binary and libraries, shared with every other sandbox, count
	// in part), plus what is resident in the memfds they hold (gVisor's
	// memory file), each counted once.
	ProcessMem int64 `json:"process_mem"`
	PssAnon    int64 `json:"pss_anon"`
	PssFile    int64 `json:"pss_file"`
	Memfd      int64 `json:"memfd"`
	// PssShmem is the processes' PSS of shared memory, for comparison
	// only: with a memory file backed by large folios that are partly
	// mapped, the kernel's estimate runs well above what is resident.
	PssShmem int64 `json:"pss_shmem"`
	// OutsidePss is the PSS of processes outside the container's memory
	// cgroup, which the cgroup's figure misses.
	OutsidePss int64 `json:"outside_pss"`
	// Shim is the engine's per-container process (containerd-shim, conmon).
	Shim int64 `json:"shim"`
	// Processes is how many host processes the container has.
	Processes int `json:"processes"`
}

// Host is the figure the bench reports: the larger of two accountings, plus
// the shim. The cgroup (with what lives outside it) misses pages charged to
// another cgroup: the runsc binary's page cache goes to whichever cgroup
// read it first, and gVisor's memory file is not always charged where its
// sentry runs. The processes' figure misses memory no process maps or holds
// open: the container's tmpfs files. Taking the
// larger never makes a sandbox look cheaper than it is.
func (m HostMemory) Host() int64 {
	return max(m.Cgroup.Used+m.OutsidePss, m.ProcessMem) + m.Shim
}

// hostMemory reads sandbox id's cost on this host.
func (e *engine) hostMemory(ctx context.Context, id string) (HostMemory, error) {
	in, err := e.rt.Client().ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return HostMemory{}, fmt.Errorf("inspect %s: %w", id, err)
	}
	if in.Container.State == nil || in.Container.State.Pid == 0 {
		return HostMemory{}, fmt.Errorf("sandbox %s has no running process", id)
	}
	pid := in.Container.State.Pid
	cg, err := cgroupMemory(pid)
	if err != nil {
		return HostMemory{}, err
	}
	m := HostMemory{Cgroup: cg, Shim: shimPss(pid)}
	procs, err := readProcs("/proc")
	if err != nil {
		return HostMemory{}, err
	}
	own := memoryCgroupOf(pid)
	pids := containerProcs(procs, pid)
	for _, p := range pids {
		r := pssOf(p)
		m.PssAnon += r["Pss_Anon"]
		m.PssFile += r["Pss_File"]
		m.PssShmem += r["Pss_Shmem"]
		m.Processes++
		if memoryCgroupOf(p) != own {
			m.OutsidePss += r["Pss"]
		}
	}
	if m.Memfd, err = memfdResident(pids); err != nil {
		return HostMemory{}, err
	}
	m.ProcessMem = m.PssAnon + m.PssFile + m.Memfd
	return m, nil
}

// proc is one host process: its parent and its command name.
type proc struct {
	ppid int
	comm string
}

// readProcs lists the processes under root (a /proc).
func readProcs(root string) (map[int]proc, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	out := map[int]proc{}
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, d.Name(), "stat"))
		if err != nil {
			continue // it exited meanwhile
		}
		if p, ok := parseStatLine(string(b)); ok {
			out[pid] = p
		}
	}
	return out, nil
}

// parseStatLine reads the command and parent pid of a /proc/PID/stat line.
// The command is in parentheses and may itself hold spaces and ')', so the
// fields are counted from the last ')'.
func parseStatLine(s string) (proc, bool) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return proc{}, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 2 {
		return proc{}, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return proc{}, false
	}
	return proc{ppid: ppid, comm: s[open+1 : end]}, true
}

// containerProcs are the host processes of the container whose first
// process is pid: every descendant of its shim (runc's container process;
// runsc's gofer and sentry, which the shim starts side by side), the shim
// itself excluded. Without a shim above pid, pid and its descendants.
func containerProcs(procs map[int]proc, pid int) []int {
	root := pid
	if parent, ok := procs[procs[pid].ppid]; ok && isShim(parent.comm) {
		root = procs[pid].ppid
	}
	children := map[int][]int{}
	for p, x := range procs {
		children[x.ppid] = append(children[x.ppid], p)
	}
	var out []int
	if root == pid {
		out = append(out, pid)
	}
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

func isShim(comm string) bool {
	return strings.Contains(comm, "shim") || strings.Contains(comm, "conmon")
}

// memoryCgroupOf is the memory cgroup of pid (v1's memory line, else v2's
// unified one), "" when unknown.
func memoryCgroupOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return ""
	}
	v2 := ""
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if strings.Contains(","+parts[1]+",", ",memory,") {
			return parts[2]
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
		}
	}
	return v2
}

// pssOf is pid's smaps_rollup in bytes (Pss, Pss_Anon, ...), empty when it
// cannot be read (the process exited).
func pssOf(pid int) map[string]int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return nil
	}
	return parseRollup(string(b))
}

func parseRollup(s string) map[string]int64 {
	out := map[string]int64{}
	for line := range strings.SplitSeq(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if f := strings.Fields(v); ok && len(f) == 2 && f[1] == "kB" {
			if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				out[k] = kb << 10
			}
		}
	}
	return out
}
