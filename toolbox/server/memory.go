package server

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/drydockhq/drydock/toolbox"
)

// MemoryConfig says where toolboxd reads the sandbox's memory accounting, so
// that a reply can say that the kernel's OOM killer ended a process, and
// why. Without it a killed shell is only "exit code -1".
type MemoryConfig struct {
	// Cgroup is the directory of the sandbox's memory cgroup: v2
	// (memory.current, memory.max, memory.events) or v1
	// (memory.usage_in_bytes, memory.limit_in_bytes, memory.oom_control);
	// DetectMemoryCgroup finds it. Empty: no accounting, as for a toolboxd
	// served in a host process (runtime/local), whose cgroup is not the
	// sandbox's.
	Cgroup string
	// Mounts are the directories whose files may be kept in memory and so
	// count against the limit: the workspace, /tmp, the home directory,
	// /dev/shm. Only those statfs shows to be tmpfs are reported.
	Mounts []string
	// Limit, when set, is the sandbox's memory limit for toolboxd to
	// enforce itself (memguard.go): where the kernel's limit does not bind
	// the sandbox's processes, as under gVisor. Needs Cgroup for the use.
	Limit int64
}

// DetectMemoryCgroup returns the directory of this process's memory cgroup,
// or "" when none can be read. Inside a container the engine mounts the
// container's own cgroup at /sys/fs/cgroup (v2) or /sys/fs/cgroup/memory
// (v1); on a host the path comes from /proc/self/cgroup.
func DetectMemoryCgroup() string {
	return detectMemoryCgroup("/sys/fs/cgroup", "/proc/self/cgroup")
}

func detectMemoryCgroup(root, procFile string) string {
	var v1, v2 string
	if data, err := os.ReadFile(procFile); err == nil {
		for line := range strings.Lines(string(data)) {
			parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
			if len(parts) != 3 {
				continue
			}
			switch {
			case parts[0] == "0" && parts[1] == "":
				v2 = parts[2]
			case strings.Contains(","+parts[1]+",", ",memory,"):
				v1 = parts[2]
			}
		}
	}
	candidates := []string{
		filepath.Join(root, "memory", v1), filepath.Join(root, "memory"), // v1
		filepath.Join(root, v2), root, // v2
	}
	for i, dir := range candidates {
		probe := "memory.limit_in_bytes"
		if i >= 2 {
			probe = "memory.current"
		}
		if _, err := os.Stat(filepath.Join(dir, probe)); err == nil {
			return dir
		}
	}
	return ""
}

// memSample is one reading of the cgroup.
type memSample struct {
	usage, limit int64 // limit 0: none
	kills        int64
	ok           bool // the OOM kill counter could be read
}

// memory reads the sandbox's memory accounting.
type memory struct {
	cfg    MemoryConfig
	statfs func(path string) (toolbox.MountUsage, bool) // reports tmpfs mounts only
	guard  *guard                                       // nil: the kernel enforces the limit
}

func newMemory(cfg MemoryConfig) *memory {
	return &memory{cfg: cfg, statfs: statTmpfs}
}

// sample reads the cgroup's usage, limit and OOM kill counter. The counter
// is "oom_kill" in memory.events (v2) or memory.oom_control (v1, kernel
// 4.13 and later).
func (m *memory) sample() memSample {
	dir := m.cfg.Cgroup
	if dir == "" {
		return memSample{}
	}
	var s memSample
	if g := m.guard; g != nil {
		// toolboxd's guard is the OOM killer that counts.
		s.usage, _ = g.usage()
		s.limit, s.kills, s.ok = g.limit, g.kills.Load(), true
		return s
	}
	if kills, ok := readKeyed(filepath.Join(dir, "memory.events"), "oom_kill"); ok {
		s.kills, s.ok = kills, true
		s.usage, _ = readInt(filepath.Join(dir, "memory.current"))
		s.limit, _ = readInt(filepath.Join(dir, "memory.max"))
		return s
	}
	s.kills, s.ok = readKeyed(filepath.Join(dir, "memory.oom_control"), "oom_kill")
	s.usage, _ = readInt(filepath.Join(dir, "memory.usage_in_bytes"))
	s.limit, _ = readInt(filepath.Join(dir, "memory.limit_in_bytes"))
	if s.limit >= 1<<60 { // v1's "no limit" is a page-rounded MaxInt64
		s.limit = 0
	}
	return s
}

// since reports the OOM kills between two samples, or nil if there were
// none (or the counter cannot be read).
func (m *memory) since(before, now memSample) *toolbox.OutOfMemory {
	if !before.ok || !now.ok || now.kills <= before.kills {
		return nil
	}
	o := &toolbox.OutOfMemory{Kills: now.kills - before.kills, LimitBytes: now.limit, UsageBytes: now.usage}
	seen := map[string]bool{}
	for _, p := range m.cfg.Mounts {
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		if u, ok := m.statfs(p); ok {
			o.Mounts = append(o.Mounts, u)
		}
	}
	o.Message = oomMessage(o)
	return o
}

// oomMessage tells the model what ran out and what to do about it. Files in
// tmpfs mounts cannot be reclaimed by the kernel, so when they hold much of
// the limit, killing processes frees little and the next command dies too:
// the way out is rm.
func oomMessage(o *toolbox.OutOfMemory) string {
	var b strings.Builder
	b.WriteString("out of memory: the kernel's OOM killer ended ")
	if o.Kills == 1 {
		b.WriteString("a process")
	} else {
		fmt.Fprintf(&b, "%d processes", o.Kills)
	}
	b.WriteString(" in the sandbox.")
	if o.LimitBytes <= 0 {
		b.WriteString(" The sandbox has no memory limit of its own: the machine ran out of memory. Use less memory at once.")
		return b.String()
	}
	fmt.Fprintf(&b, " Its memory limit is %s; %s is in use now.", mib(o.LimitBytes), mib(o.UsageBytes))
	var files int64
	var held []string
	for _, m := range o.Mounts {
		files += m.UsedBytes
		if m.UsedBytes >= 1<<20 {
			held = append(held, fmt.Sprintf("%s %s of %s", m.Path, mib(m.UsedBytes), mib(m.SizeBytes)))
		}
	}
	if len(held) == 0 {
		b.WriteString(" Processes used it: use less memory at once (smaller inputs, fewer parallel jobs).")
		return b.String()
	}
	fmt.Fprintf(&b, " Files hold %s of it (%s): these directories are kept in memory, so their files count against the limit.", mib(files), strings.Join(held, ", "))
	if files >= o.LimitBytes/4 {
		b.WriteString(" Free space with rm (or write less), then retry.")
	} else {
		b.WriteString(" Processes used the rest: use less memory at once (smaller inputs, fewer parallel jobs), or free space with rm.")
	}
	return b.String()
}

func mib(n int64) string { return strconv.FormatInt((n+(1<<19))>>20, 10) + " MiB" }

// tmpfsMagic is the f_type of tmpfs in statfs(2).
const tmpfsMagic = 0x01021994

func statTmpfs(path string) (toolbox.MountUsage, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil || int64(st.Type) != tmpfsMagic {
		return toolbox.MountUsage{}, false
	}
	bs := int64(st.Bsize)
	return toolbox.MountUsage{Path: path, UsedBytes: int64(st.Blocks-st.Bfree) * bs, SizeBytes: int64(st.Blocks) * bs}, true
}

func readInt(path string) (int64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(string(bytes.TrimSpace(data)), 10, 64)
	return v, err == nil // "max" (v2's no limit) reads as 0
}

// readKeyed reads "key value" from a flat-keyed cgroup file.
func readKeyed(path, key string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
