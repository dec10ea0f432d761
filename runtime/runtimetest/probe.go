package runtimetest

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ProbeScript looks at the sandbox from inside, as an agent's command could,
// and prints what it found as JSON. It tries things that must fail and says
// how they failed (an errno name), or "ok" when they did not. Run it with
// python3 -c through toolboxd, as an agent's command runs, and give its
// output to ParseProbe and CheckProbe.
const ProbeScript = `
import ctypes, errno, json, os, subprocess, time

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {"x86_64": dict(add_key=248, request_key=249, keyctl=250, ptrace=101, unshare=272, mount=165),
      "aarch64": dict(add_key=217, request_key=218, keyctl=219, ptrace=117, unshare=97, mount=40)}[os.uname().machine]

def call(name, *args):
    ctypes.set_errno(0)
    r = libc.syscall(NR[name], *[a if isinstance(a, (bytes, type(None))) else ctypes.c_long(a) for a in args])
    return "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))

def oserr(f):
    try:
        f()
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    return "ok"

def open_write(p):
    def f():
        os.close(os.open(p, os.O_WRONLY))
    return oserr(f)

out = {"uid": [os.getuid(), os.geteuid(), os.getgid(), os.getegid()]}
out["mountinfo"] = open("/proc/self/mountinfo").read()
out["writes"] = {p: open_write(p) for p in [
    "/proc/sys/kernel/hostname", "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe",
    "/proc/sys/vm/drop_caches", "/proc/sys/net/ipv4/ip_forward", "/proc/sysrq-trigger",
    "/sys/kernel/uevent_helper", "/sys/kernel/mm/transparent_hugepage/enabled", "/sys/power/state",
    "/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/pids.max",
    "/sys/fs/cgroup/pids/pids.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"]}
# Every directory mounted in (not the kernel's): may the sandbox create a
# file, a directory or a link there, or rename what is there? CheckProbe
# requires a refusal for those bound from the host, which would otherwise
# be a way onto the host's disk. Whatever was made is removed again.
def try_writes(d):
    name = os.path.join(d, ".drydock-probe-%d" % os.getpid())
    res = {}
    def create():
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        os.remove(name)
    def mkdir():
        os.mkdir(name)
        os.rmdir(name)
    def symlink():
        os.symlink("/etc/passwd", name)
        os.remove(name)
    def rename():
        entries = sorted(os.listdir(d))
        if not entries:
            raise OSError(errno.ENOENT, "empty")
        src = os.path.join(d, entries[0])
        os.rename(src, name)
        os.rename(name, src)
    for what, f in (("create", create), ("mkdir", mkdir), ("symlink", symlink), ("rename", rename)):
        res[what] = oserr(f)
    return res
out["bound_writes"] = {}
for line in out["mountinfo"].splitlines():
    point = line.split()[4]
    if point.startswith(("/proc", "/sys", "/dev")) or not os.path.isdir(point):
        continue
    out["bound_writes"][point] = try_writes(point)
out["creates"] = {d: oserr(lambda d=d: os.close(os.open(d + "/drydock-probe", os.O_WRONLY | os.O_CREAT, 0o644)))
    for d in ["/proc", "/sys", "/sys/fs/cgroup", "/sys/kernel"]}

# The kernel keyring: the engines' seccomp profiles refuse these calls.
KEY_SPEC_PROCESS_KEYRING, KEY_SPEC_SESSION_KEYRING = -2, -3
out["keyring"] = {
    "add_key": call("add_key", b"user", b"drydock-probe", b"x", 1, KEY_SPEC_PROCESS_KEYRING),
    "request_key": call("request_key", b"user", b"drydock-probe", None, 0),
    "keyctl": call("keyctl", 0, KEY_SPEC_SESSION_KEYRING, 0),
}

# The processes the sandbox can see, with their parents.
procs = {}
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            st = dict(l.split(":", 1) for l in open("/proc/%s/status" % p).read().splitlines() if ":" in l)
        except OSError:
            continue
        procs[p] = {"comm": st["Name"].strip(), "ppid": int(st["PPid"]), "uid": int(st["Uid"].split()[1])}
out["procs"] = procs

# ptrace: pid 1 and toolboxd must refuse; a child of our own must not, or
# the refusals would prove nothing.
PTRACE_ATTACH, PTRACE_DETACH = 16, 17
def attach(pid):
    r = call("ptrace", PTRACE_ATTACH, pid, 0, 0)
    if r == "ok":
        os.waitpid(pid, 0x40000000)  # __WALL: a tracee is the tracer's to wait for
        call("ptrace", PTRACE_DETACH, pid, 0, 0)
    return r
child = subprocess.Popen(["sleep", "30"])
toolboxd = [int(p) for p, v in procs.items() if v["comm"] == "toolboxd"]
out["ptrace"] = {"1": attach(1), "own_child": attach(child.pid)}
for pid in toolboxd:
    out["ptrace"]["toolboxd"] = attach(pid)
child.kill()
child.wait()

# Privileges: none to gain by calls, namespaces, mounts or setuid programs.
out["setuid0"] = oserr(lambda: os.setuid(0))
out["setgroups"] = oserr(lambda: os.setgroups([0]))
out["mount"] = call("mount", b"none", b"/workspace", b"tmpfs", 0, None)
out["unshare_mount"] = call("unshare", 0x00020000)
out["unshare_user"] = call("unshare", 0x10000000)
suid = []
for root, dirs, files in os.walk("/"):
    if root in ("/proc", "/sys", "/dev"):
        dirs[:] = []
        continue
    for f in files:
        p = os.path.join(root, f)
        try:
            if os.lstat(p).st_mode & 0o6000 and not os.path.islink(p):
                suid.append(p)
        except OSError:
            pass
out["setuid_files"] = suid
def runs(argv):
    try:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
    except FileNotFoundError:
        return "absent"
    except subprocess.TimeoutExpired:
        return "timeout"
    return "exit %d: %s" % (r.returncode, r.stdout.decode(errors="replace").strip()[:200])
out["su"] = runs(["su", "-c", "id -u", "root"])

# An orphan: its parent exits at once, so it passes to pid 1 (or a
# subreaper), which must reap it when it ends; a zombie left behind holds a
# pid against the sandbox's pids limit until the sandbox ends.
orphan = int(subprocess.run(["sh", "-c", "sleep 0.2 & echo $!"], capture_output=True).stdout)
out["orphan"] = "reaped"
for _ in range(30):
    try:
        state = [l for l in open("/proc/%d/status" % orphan).read().splitlines() if l.startswith("State:")][0]
    except (OSError, IndexError):
        out["orphan"] = "reaped"
        break
    out["orphan"] = state.split(None, 1)[1]
    time.sleep(0.1)
out["sudo"] = runs(["sudo", "-n", "id", "-u"])
print(json.dumps(out))
`

// ProbeResult is what ProbeScript prints.
type ProbeResult struct {
	UID         []int                `json:"uid"`
	Mountinfo   string               `json:"mountinfo"`
	Writes      map[string]string    `json:"writes"`
	Creates     map[string]string    `json:"creates"`
	Keyring     map[string]string    `json:"keyring"`
	Procs       map[string]ProbeProc `json:"procs"`
	Ptrace      map[string]string    `json:"ptrace"`
	SetUID0     string               `json:"setuid0"`
	SetGroups   string               `json:"setgroups"`
	UnshareUser string               `json:"unshare_user"`
	UnshareMnt  string               `json:"unshare_mount"`
	Mount       string               `json:"mount"`
	SetUIDFiles []string             `json:"setuid_files"`
	Su          string               `json:"su"`
	Sudo        string               `json:"sudo"`
	SetUIDRuns  map[string]string    `json:"setuid_runs"`
	Orphan      string               `json:"orphan"`
	// BoundWrites are, for each directory mount point, how creating a
	// file, a directory and a link and renaming an entry there went.
	BoundWrites map[string]map[string]string `json:"bound_writes"`
}

// ProbeProc is a process the probe saw in /proc.
type ProbeProc struct {
	Comm string `json:"comm"`
	PPid int    `json:"ppid"`
	UID  int    `json:"uid"`
}

// ParseProbe decodes what ProbeScript printed; stderr goes into the failure.
func ParseProbe(t testing.TB, stdout, stderr string) ProbeResult {
	t.Helper()
	var p ProbeResult
	if err := json.Unmarshal([]byte(stdout), &p); err != nil {
		t.Fatalf("probe output: %v\n%s\nstderr: %s", err, stdout, stderr)
	}
	t.Logf("probe: writes %v creates %v keyring %v ptrace %v setuid(0) %s setgroups %s unshare user %s mount ns %s mount %s su %q sudo %q setuid files %v",
		p.Writes, p.Creates, p.Keyring, p.Ptrace, p.SetUID0, p.SetGroups, p.UnshareUser, p.UnshareMnt, p.Mount, p.Su, p.Sudo, p.SetUIDFiles)
	return p
}

// ProbeMount is one line of /proc/self/mountinfo.
type ProbeMount struct {
	Root, Point, FSType, Source string
	Opts                        []string
}

// ProbeOptions says what differs between runtimes; everything else
// CheckProbe checks the same way for all of them.
type ProbeOptions struct {
	// Volumes are the mount points where the sandbox writes (the
	// workspace, /tmp, the home directory, ...). Each must be mounted, and
	// Volume must accept it.
	Volumes []string
	// Volume checks how a volume is mounted: what backs it.
	Volume func(m ProbeMount) error
	// Bound are the other mount points the runtime binds in: the engine's
	// or the kubelet's per-container files, an init binary, a socket dir.
	// They may be absent; Required lists those that must be there.
	Bound    []string
	Required []string
	// Inits are the names pid 1 may have: the engine's init, or the
	// pod's pause process.
	Inits []string
	// Roots are the names of processes other than pid 1 that may have
	// their parent outside the sandbox's PID namespace: in a pod that
	// shares one, each container's first process (its parent is the
	// container runtime's shim, on the node).
	Roots []string
	// GVisor says the sandbox runs under gVisor, whose kernel (the
	// sentry, a host process under its own seccomp filter) answers some
	// checks differently but as safely: its /dev is "dev", its cgroupfs is
	// mounted rw with root-owned files (the writes must still be refused),
	// and it has fewer /proc and /sys files. Its keyring and user
	// namespaces are its own, not the host
	// kernel's: runsc applies the sandbox's seccomp profile only with
	// --oci-seccomp, which breaks glibc's posix_spawn under gVisor and is
	// not used (scripts/lib.sh, runsc_runtimes).
	GVisor bool
}

// CheckProbe checks a probe's result: uid and gid 1000; every mount
// accounted for; no writes in what the runtime binds in from the host; nothing in /proc and /sys writable; the kernel keyring
// refused by seccomp; only the sandbox's own processes visible, none as
// root; toolboxd not ptrace-able; setuid, setgroups, new namespaces, mounts,
// su and sudo giving nothing; orphans reaped.
func CheckProbe(t testing.TB, p ProbeResult, opts ProbeOptions) {
	t.Helper()
	if !slices.Equal(p.UID, []int{1000, 1000, 1000, 1000}) {
		t.Errorf("uid, euid, gid, egid = %v; want 1000", p.UID)
	}
	checkMounts(t, p.Mountinfo, opts)
	// What the runtime binds in from the host must not take writes: a
	// writable host directory is the host's disk, past every limit.
	for _, point := range opts.Bound {
		for what, got := range p.BoundWrites[point] {
			if got == "ok" {
				t.Errorf("%s in %s (bound from the host) succeeded; want it refused", what, point)
			}
		}
	}

	// /proc and /sys: nothing opens for writing. A path the kernel
	// lacks proves nothing, so most of them must exist.
	refused := func(what, path, got string) {
		if !slices.Contains([]string{"EACCES", "EROFS", "EPERM"}, got) && got != "ENOENT" {
			t.Errorf("%s %s: %s; want it refused", what, path, got)
		}
	}
	present := 0
	for path, got := range p.Writes {
		refused("open for writing", path, got)
		if got != "ENOENT" {
			present++
		}
	}
	least := len(p.Writes) / 2
	if opts.GVisor {
		least = min(len(p.Writes)/3, 4) // gVisor's kernel has fewer of them
	}
	if present < least {
		t.Errorf("only %d of the probed /proc and /sys files exist: %v", present, p.Writes)
	}
	for dir, got := range p.Creates {
		refused("creating a file in", dir, got)
	}

	// The kernel keyring is shared with the host: the seccomp profile
	// must refuse every call to it (on Podman, the profile the runtime
	// derives from the engine's; see runtime/docker/seccomp.go).
	for call, got := range p.Keyring {
		if opts.GVisor {
			// The keyring of gVisor's kernel, per sandbox: nothing of
			// the host's.
			continue
		}
		if got != "EPERM" && got != "ENOSYS" {
			t.Errorf("%s: %s; want it refused by seccomp (EPERM or ENOSYS)", call, got)
		}
	}

	// Only the sandbox's processes are visible: one root of the tree
	// (pid 1), no kernel threads, none of the host's.
	var roots []string
	for pid, pr := range p.Procs {
		if pr.PPid == 0 && pid != "1" && !slices.Contains(opts.Roots, pr.Comm) {
			roots = append(roots, pid+"="+pr.Comm)
		}
		if _, ok := p.Procs[strconv.Itoa(pr.PPid)]; pr.PPid != 0 && !ok {
			// A parent that ended between the reads is fine; one
			// outside the namespace would show as ppid 0.
			t.Logf("process %s (%s) has parent %d, gone", pid, pr.Comm, pr.PPid)
		}
	}
	if _, ok := p.Procs["1"]; !ok || len(roots) > 0 {
		t.Errorf("processes without a parent in the sandbox: %v; want only pid 1 and %v (%v)", roots, opts.Roots, p.Procs)
	}
	if len(p.Procs) > 40 {
		t.Errorf("%d processes visible in an idle sandbox: %v", len(p.Procs), p.Procs)
	}

	// No process in the sandbox runs as root, so ptrace reaches nothing
	// the agent does not own already: an init under the agent's uid
	// (attaching to it works and gains nothing), and toolboxd, which
	// holds the token, is non-dumpable and refuses.
	for pid, pr := range p.Procs {
		if pr.UID != 1000 {
			t.Errorf("process %s (%s) runs as uid %d in the sandbox", pid, pr.Comm, pr.UID)
		}
	}
	if init := p.Procs["1"].Comm; !slices.Contains(opts.Inits, init) {
		t.Errorf("pid 1 is %q; want one of %v", init, opts.Inits)
	}
	t.Logf("ptrace attach: own child %s, pid 1 (%s) %s, toolboxd %s", p.Ptrace["own_child"], p.Procs["1"].Comm, p.Ptrace["1"], p.Ptrace["toolboxd"])
	if p.Ptrace["own_child"] != "ok" {
		// The refusals below prove something only if ptrace works at
		// all where the kernel allows it.
		t.Logf("ptrace of the probe's own child: %s", p.Ptrace["own_child"])
	}
	if got, ok := p.Ptrace["toolboxd"]; !ok {
		t.Error("the probe found no toolboxd to attach to")
	} else if got == "ok" {
		t.Error("ptrace attach of toolboxd succeeded")
	}
	// An init reaps what the agent's commands leave behind; without one
	// (toolboxd as pid 1) every orphan stays a zombie.
	if p.Orphan != "reaped" {
		t.Errorf("an orphaned process is %q 3 s after it started; want it reaped by pid 1 (%s)", p.Orphan, p.Procs["1"].Comm)
	}

	for what, got := range map[string]string{"setuid(0)": p.SetUID0, "setgroups([0])": p.SetGroups,
		"unshare(CLONE_NEWUSER)": p.UnshareUser, "unshare(CLONE_NEWNS)": p.UnshareMnt, "mount(tmpfs)": p.Mount} {
		if got == "ok" && opts.GVisor && what == "unshare(CLONE_NEWUSER)" {
			// A user namespace of gVisor's kernel: its capabilities
			// reach no further than that kernel, and the mount checks
			// above still had to fail.
			t.Logf("%s succeeded: a namespace of gVisor's kernel", what)
			continue
		}
		if got == "ok" {
			t.Errorf("%s succeeded", what)
		}
	}
	// su and sudo are absent or fail; a setuid program runs with the
	// caller's ids under no-new-privileges, so none may report root.
	for what, got := range map[string]string{"su": p.Su, "sudo": p.Sudo} {
		if f := strings.Fields(got); strings.HasPrefix(got, "exit 0:") && len(f) > 0 && f[len(f)-1] == "0" {
			t.Errorf("%s gave root: %q", what, got)
		}
	}
}

// checkMounts accounts for every mount in a mountinfo table: the read-only
// root, the runtime's own /proc, /sys and /dev (kernel filesystems only,
// /sys read-only), the volumes where the agent writes, and what the runtime
// binds in; anything else is a way out to the host.
func checkMounts(t testing.TB, mountinfo string, opts ProbeOptions) {
	t.Helper()
	kernelFS := []string{"proc", "sysfs", "tmpfs", "devtmpfs", "devpts", "mqueue", "cgroup", "cgroup2"}
	if opts.GVisor {
		kernelFS = append(kernelFS, "dev") // gVisor's devtmpfs
	}
	seen := map[string]bool{}
	for line := range strings.Lines(mountinfo) {
		pre, post, ok := strings.Cut(strings.TrimSpace(line), " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 6 || len(g) < 2 {
			t.Errorf("mountinfo line %q", line)
			continue
		}
		m := ProbeMount{Root: f[3], Point: f[4], Opts: strings.Split(f[5], ","), FSType: g[0], Source: g[1]}
		seen[m.Point] = true
		under := func(dir string) bool { return m.Point == dir || strings.HasPrefix(m.Point, dir+"/") }
		switch {
		case m.Point == "/":
			if !slices.Contains(m.Opts, "ro") {
				t.Errorf("the root is mounted %v, not read-only", m.Opts)
			}
		case slices.Contains(opts.Volumes, m.Point):
			if err := opts.Volume(m); err != nil {
				t.Errorf("%s is %s from %s (root %s): %v", m.Point, m.FSType, m.Source, m.Root, err)
			}
		case slices.Contains(opts.Bound, m.Point):
		case m.FSType == "tmpfs" && !under("/proc") && !under("/sys"):
			// Memory, not the host's disk (Podman adds /run and /var/tmp
			// to a read-only container).
		case under("/proc") || under("/sys") || under("/dev"):
			if !slices.Contains(kernelFS, m.FSType) {
				t.Errorf("%s is %s from %s (root %s); want a kernel filesystem", m.Point, m.FSType, m.Source, m.Root)
			}
			cgroup := m.FSType == "cgroup" || m.FSType == "cgroup2"
			// gVisor's cgroupfs is rw with root-owned files: the probe's
			// writes in it must be refused (checked with the others).
			if (m.Point == "/sys" || m.Point == "/proc/sys" || cgroup && !opts.GVisor) && !slices.Contains(m.Opts, "ro") {
				t.Errorf("%s is mounted %v, not read-only", m.Point, m.Opts)
			}
		default:
			t.Errorf("unexpected mount in the sandbox: %s (%s from %s, root %s)", m.Point, m.FSType, m.Source, m.Root)
		}
	}
	for _, want := range slices.Concat([]string{"/", "/proc", "/sys"}, opts.Volumes, opts.Required) {
		if !seen[want] {
			t.Errorf("no mount at %s in\n%s", want, mountinfo)
		}
	}
}
