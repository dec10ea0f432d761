package docker

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock/toolbox"
)

// probeScript looks at the sandbox from inside, as an agent's command could,
// and prints what it found as JSON. It tries things that must fail and says
// how they failed (an errno name), or "ok" when they did not.
const probeScript = `
import ctypes, errno, json, os, subprocess

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
out["sudo"] = runs(["sudo", "-n", "id", "-u"])
print(json.dumps(out))
`

// probeResult is what probeScript prints.
type probeResult struct {
	UID         []int                `json:"uid"`
	Mountinfo   string               `json:"mountinfo"`
	Writes      map[string]string    `json:"writes"`
	Creates     map[string]string    `json:"creates"`
	Keyring     map[string]string    `json:"keyring"`
	Procs       map[string]probeProc `json:"procs"`
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
}

type probeProc struct {
	Comm string `json:"comm"`
	PPid int    `json:"ppid"`
	UID  int    `json:"uid"`
}

// TestProbeFromInside runs a probe the way an agent runs a command (through
// toolboxd) and checks what TestSecurityDefaults does not: which mounts the
// sandbox has, that /proc and /sys cannot be written, that the kernel
// keyring, ptrace of the sandbox's own daemon and init, new namespaces,
// mounts and setuid programs give nothing.
func TestProbeFromInside(t *testing.T) {
	t.Parallel()
	forRealImage(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		sb := secure(t, s, rt)
		tc := toolbox.New(sb.Endpoint, sb.Token)
		defer tc.Close()
		var out, errOut lockedBuffer
		r, err := tc.Exec(t.Context(), toolbox.ExecRequest{Args: []string{"python3", "-c", probeScript}}, &out, &errOut)
		if err != nil || r.ExitCode != 0 {
			t.Fatalf("probe: %+v %v\nstderr: %s", r, err, errOut.String())
		}
		var p probeResult
		if err := json.Unmarshal([]byte(out.String()), &p); err != nil {
			t.Fatalf("probe output: %v\n%s\nstderr: %s", err, out.String(), errOut.String())
		}
		t.Logf("probe: writes %v creates %v keyring %v ptrace %v setuid(0) %s setgroups %s unshare user %s mount ns %s mount %s su %q sudo %q setuid files %v",
			p.Writes, p.Creates, p.Keyring, p.Ptrace, p.SetUID0, p.SetGroups, p.UnshareUser, p.UnshareMnt, p.Mount, p.Su, p.Sudo, p.SetUIDFiles)

		if !slices.Equal(p.UID, []int{1000, 1000, 1000, 1000}) {
			t.Errorf("uid, euid, gid, egid = %v; want 1000", p.UID)
		}
		checkMounts(t, p.Mountinfo)

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
		if present < len(p.Writes)/2 {
			t.Errorf("only %d of the probed /proc and /sys files exist: %v", present, p.Writes)
		}
		for dir, got := range p.Creates {
			refused("creating a file in", dir, got)
		}

		// The kernel keyring is shared with the host: the seccomp profile
		// must refuse every call to it.
		podman := s.host == os.Getenv("DRYDOCK_TEST_PODMAN_HOST")
		for call, got := range p.Keyring {
			if podman && call == "keyctl" && got == "ok" {
				// Podman's default seccomp profile allows keyctl (not
				// add_key or request_key); see docs/SECURITY.md.
				t.Logf("known gap on podman: keyctl is allowed")
				continue
			}
			if got != "EPERM" && got != "ENOSYS" {
				t.Errorf("%s: %s; want it refused by seccomp (EPERM or ENOSYS)", call, got)
			}
		}

		// Only the sandbox's processes are visible: one root of the tree
		// (the init), no kernel threads, none of the host's.
		var roots []string
		for pid, pr := range p.Procs {
			if pr.PPid == 0 {
				roots = append(roots, pid+"="+pr.Comm)
			}
			if _, ok := p.Procs[strconv.Itoa(pr.PPid)]; pr.PPid != 0 && !ok {
				// A parent that ended between the reads is fine; one
				// outside the namespace would show as ppid 0.
				t.Logf("process %s (%s) has parent %d, gone", pid, pr.Comm, pr.PPid)
			}
		}
		if !slices.Equal(roots, []string{"1=" + p.Procs["1"].Comm}) {
			t.Errorf("processes without a parent in the sandbox: %v; want only pid 1 (%v)", roots, p.Procs)
		}
		if len(p.Procs) > 40 {
			t.Errorf("%d processes visible in an idle sandbox: %v", len(p.Procs), p.Procs)
		}

		// No process in the sandbox runs as root, so ptrace reaches nothing
		// the agent does not own already: pid 1 is the engine's init under
		// the agent's uid (attaching to it works and gains nothing), and
		// toolboxd, which holds the token, is non-dumpable and refuses.
		for pid, pr := range p.Procs {
			if pr.UID != 1000 {
				t.Errorf("process %s (%s) runs as uid %d in the sandbox", pid, pr.Comm, pr.UID)
			}
		}
		if init := p.Procs["1"].Comm; !slices.Contains([]string{"docker-init", "tini", "catatonit", "podman-init"}, init) {
			t.Errorf("pid 1 is %q; want the engine's init", init)
		}
		t.Logf("ptrace attach: own child %s, pid 1 (%s) %s, toolboxd %s", p.Ptrace["own_child"], p.Procs["1"].Comm, p.Ptrace["1"], p.Ptrace["toolboxd"])
		if got, ok := p.Ptrace["toolboxd"]; !ok {
			t.Error("the probe found no toolboxd to attach to")
		} else if got == "ok" {
			t.Error("ptrace attach of toolboxd succeeded")
		}

		if podman && p.UnshareUser == "ok" {
			// Podman's default seccomp profile allows new user
			// namespaces (Docker's refuses them without CAP_SYS_ADMIN): a
			// command gets capabilities over namespaces of its own, no more
			// than an unprivileged user on the host; see docs/SECURITY.md.
			t.Logf("known gap on podman: unshare(CLONE_NEWUSER) is allowed")
			p.UnshareUser = "allowed on podman"
		}
		for what, got := range map[string]string{"setuid(0)": p.SetUID0, "setgroups([0])": p.SetGroups,
			"unshare(CLONE_NEWUSER)": p.UnshareUser, "unshare(CLONE_NEWNS)": p.UnshareMnt, "mount(tmpfs)": p.Mount} {
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

		// The engine agrees: the only bind mount is toolboxd's socket dir.
		inspect, err := rt.Client().ContainerInspect(t.Context(), sb.ID, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range inspect.Container.Mounts {
			if m.Type == "bind" && m.Destination == toolboxDir {
				continue
			}
			if m.Type != "tmpfs" {
				t.Errorf("mount from the host: %s %s -> %s", m.Type, m.Source, m.Destination)
			}
		}
	})
}

// checkMounts accounts for every mount in a mountinfo table: the read-only
// root, the engine's own /proc, /sys and /dev (kernel filesystems only, /sys
// read-only), the tmpfs where the agent writes, toolboxd's socket dir, and
// the engine's per-container files; anything else is a way out to the host.
func checkMounts(t *testing.T, mountinfo string) {
	t.Helper()
	kernelFS := []string{"proc", "sysfs", "tmpfs", "devtmpfs", "devpts", "mqueue", "cgroup", "cgroup2"}
	// The engine's per-container files and its init binary, bound in
	// read-only or owned by root.
	engineFiles := []string{"/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/run/.containerenv",
		"/usr/sbin/docker-init", "/run/podman-init"}
	seen := map[string]bool{}
	for line := range strings.Lines(mountinfo) {
		pre, post, ok := strings.Cut(strings.TrimSpace(line), " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 6 || len(g) < 2 {
			t.Errorf("mountinfo line %q", line)
			continue
		}
		root, point, opts, fstype, source := f[3], f[4], strings.Split(f[5], ","), g[0], g[1]
		seen[point] = true
		under := func(dir string) bool { return point == dir || strings.HasPrefix(point, dir+"/") }
		switch {
		case point == "/":
			if !slices.Contains(opts, "ro") {
				t.Errorf("the root is mounted %v, not read-only", opts)
			}
		case point == "/workspace" || point == "/tmp" || point == "/home/agent":
			if fstype != "tmpfs" {
				t.Errorf("%s is %s from %s (root %s); want a tmpfs", point, fstype, source, root)
			}
		case point == toolboxDir:
		case slices.Contains(engineFiles, point):
		case fstype == "tmpfs" && !under("/proc") && !under("/sys"):
			// Memory, not the host's disk (Podman adds /run and /var/tmp
			// to a read-only container).
		case under("/proc") || under("/sys") || under("/dev"):
			if !slices.Contains(kernelFS, fstype) {
				t.Errorf("%s is %s from %s (root %s); want a kernel filesystem", point, fstype, source, root)
			}
			if (point == "/sys" || point == "/proc/sys" || fstype == "cgroup" || fstype == "cgroup2") && !slices.Contains(opts, "ro") {
				t.Errorf("%s is mounted %v, not read-only", point, opts)
			}
		default:
			t.Errorf("unexpected mount in the sandbox: %s (%s from %s, root %s)", point, fstype, source, root)
		}
	}
	for _, want := range []string{"/", "/workspace", "/tmp", "/home/agent", toolboxDir, "/proc", "/sys"} {
		if !seen[want] {
			t.Errorf("no mount at %s in\n%s", want, mountinfo)
		}
	}
}
