package e2e_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/image"
	"github.com/moby/moby/client"
)

// privateDockerd is a dockerd of one test's own, so that the test may kill
// and restart it without disturbing the engine other tests share.
type privateDockerd struct {
	t          *testing.T
	root, host string
	cmd        *exec.Cmd
	done       chan struct{}
	log        *syncBuffer
}

// startPrivateDockerd skips unless DRYDOCK_TEST_FAULTS=1, dockerd is
// installed and the test runs as root.
func startPrivateDockerd(t *testing.T, liveRestore bool) *privateDockerd {
	t.Helper()
	if os.Getenv("DRYDOCK_TEST_FAULTS") != "1" {
		t.Skip("DRYDOCK_TEST_FAULTS not 1: the tests that kill and restart an engine of their own are off (scripts/test.sh turns them on)")
	}
	if _, err := exec.LookPath("dockerd"); err != nil {
		t.Skip("dockerd not installed")
	}
	if os.Geteuid() != 0 {
		t.Skip("a private dockerd needs root")
	}
	// Short paths: containerd's sockets live under the exec root.
	root := fmt.Sprintf("/run/drydock-fault-%d-%d", os.Getpid(), nodeSeq.Add(1))
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	// The data root holds images and layers: on disk, not on /run's tmpfs.
	data := filepath.Join("/var/lib", filepath.Base(root))
	d := &privateDockerd{t: t, root: root, host: "unix://" + filepath.Join(root, "docker.sock"), log: &syncBuffer{}}
	t.Cleanup(func() {
		d.stop(syscall.SIGTERM)
		// Sandboxes the daemon could not remove (it failed to come back)
		// keep running under their shims.
		killShims(root)
		// The daemon mounts its data root on itself and leaves network
		// namespaces under its exec root.
		unmountUnder(data, root)
		os.RemoveAll(data)
		os.RemoveAll(root)
		if t.Failed() {
			t.Logf("private dockerd's errors:\n%s", grepLines(d.log.String(), "level=error", "level=fatal", "level=warning"))
		}
	})
	d.args(data, liveRestore)
	d.start()
	return d
}

// killShims kills the containerd shims serving the daemon under root, and
// the containers' processes below them.
func killShims(root string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(cmdline, []byte("containerd-shim")) || !bytes.Contains(cmdline, []byte(root+"/")) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		killTree(pid)
	}
}

// killTree kills pid's descendants, then pid.
func killTree(pid int) {
	children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, c := range strings.Fields(string(children)) {
		if n, err := strconv.Atoi(c); err == nil {
			killTree(n)
		}
	}
	syscall.Kill(pid, syscall.SIGKILL)
}

// unmountUnder lazily unmounts every mount at or below the given
// directories, deepest first.
func unmountUnder(dirs ...string) {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		for _, d := range dirs {
			if f[1] == d || strings.HasPrefix(f[1], d+"/") {
				points = append(points, f[1])
			}
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, p := range points {
		syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

func (d *privateDockerd) args(data string, liveRestore bool) {
	args := []string{"--host", d.host, "--data-root", data, "--exec-root", filepath.Join(d.root, "exec"),
		"--pidfile", filepath.Join(d.root, "dockerd.pid"), "--bridge", "none", "--iptables=false", "--ip6tables=false",
		"--ip-forward=false", "--ip-masq=false"}
	if liveRestore {
		args = append(args, "--live-restore")
	}
	d.cmd = exec.Command("dockerd", args...)
}

// start launches dockerd and waits until it answers.
func (d *privateDockerd) start() {
	d.t.Helper()
	// A killed daemon leaves its pidfile, and dockerd refuses to start
	// while it names a live process (pids are reused).
	os.Remove(filepath.Join(d.root, "dockerd.pid"))
	cmd := exec.Command(d.cmd.Path, d.cmd.Args[1:]...)
	cmd.Stdout, cmd.Stderr = d.log, d.log
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.cmd = cmd
	d.done = make(chan struct{})
	go func() { cmd.Wait(); close(d.done) }()
	sock := strings.TrimPrefix(d.host, "unix://")
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "unix", sock)
	}}, Timeout: 2 * time.Second}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		select {
		case <-d.done:
			d.t.Fatalf("private dockerd exited: %v", d.cmd.ProcessState)
		default:
		}
		if resp, err := hc.Get("http://docker/_ping"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("private dockerd did not answer within 2 minutes:\n%s", d.log)
		}
	}
}

// stop signals dockerd and waits for it to exit.
func (d *privateDockerd) stop(sig syscall.Signal) {
	if d.done == nil {
		return
	}
	select {
	case <-d.done:
		return
	default:
	}
	d.cmd.Process.Signal(sig)
	select {
	case <-d.done:
	case <-time.After(time.Minute):
		d.cmd.Process.Kill()
		<-d.done
	}
}

// crash kills dockerd and the containerd it manages with SIGKILL, as a
// crash of the whole engine would; the containers' shims live on. (Killing
// dockerd alone leaves a containerd that may not answer the next dockerd.)
func (d *privateDockerd) crash() {
	d.t.Helper()
	d.stop(syscall.SIGKILL)
	b, err := os.ReadFile(filepath.Join(d.root, "exec", "containerd", "containerd.pid"))
	if err != nil {
		return // it died with dockerd
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		d.t.Fatalf("containerd pid file holds %q", b)
	}
	if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); bytes.Contains(cmdline, []byte(d.root)) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	// Until init reaps it, the dead containerd is a zombie that the next
	// dockerd takes for a live one and waits for in vain.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("containerd %d was not reaped within 10s of SIGKILL", pid)
		}
	}
}

// tinySandboxImage imports an image of static busybox and this tree's
// toolboxd: enough for the fake agent, which only writes files, and a few
// MB instead of the real image's 1.5 GB.
func (d *privateDockerd) tinySandboxImage() string {
	d.t.Helper()
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		d.t.Skip("busybox not installed (apt-get install busybox-static; scripts/testenv/docker-up.sh does)")
	}
	toolboxd := filepath.Join(d.t.TempDir(), "toolboxd")
	build := exec.Command("go", "build", "-trimpath", "-o", toolboxd, "../cmd/toolboxd")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		d.t.Fatalf("build toolboxd: %v\n%s", err, out)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, dir := range []string{"bin", "usr", "usr/local", "usr/local/bin", "etc", "tmp", "proc", "sys", "dev", "run"} {
		tw.WriteHeader(&tar.Header{Name: dir + "/", Typeflag: tar.TypeDir, Mode: 0o755})
	}
	for _, dir := range []string{"home", "home/agent", "workspace", "run/toolbox"} {
		tw.WriteHeader(&tar.Header{Name: dir + "/", Typeflag: tar.TypeDir, Mode: 0o755, Uid: 1000, Gid: 1000})
	}
	add := func(name string, data []byte, mode int64) {
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(data))})
		tw.Write(data)
	}
	for _, f := range []struct{ src, dst string }{{busybox, "bin/busybox"}, {toolboxd, "usr/local/bin/toolboxd"}} {
		data, err := os.ReadFile(f.src)
		if err != nil {
			d.t.Fatal(err)
		}
		add(f.dst, data, 0o755)
	}
	add("etc/passwd", []byte("root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000::/home/agent:/bin/sh\n"), 0o644)
	add("etc/group", []byte("root:x:0:\nagent:x:1000:\n"), 0o644)
	// toolboxd's readiness wants a bash on PATH; the fake agent runs none.
	for _, name := range []string{"bin/sh", "bin/bash"} {
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777})
	}
	tw.Close()

	cli, err := image.NewClient(d.host)
	if err != nil {
		d.t.Fatal(err)
	}
	defer cli.Close()
	const ref = "drydock-fault-sandbox:headless"
	res, err := cli.ImageImport(d.t.Context(), client.ImageImportSource{Source: &buf, SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: image.Changes(drydock.ProfileHeadless)})
	if err != nil {
		d.t.Fatalf("import the test image: %v", err)
	}
	io.Copy(io.Discard, res)
	res.Close()
	return ref
}

// The engine restarts while jobs run in its sandboxes. Toolboxd is reached
// through a socket on the host, not through the engine, so:
//
//   - with --live-restore, a kill -9 of dockerd and its containerd and a
//     restart go unnoticed: the running job completes in its sandbox, a job
//     scheduled while the engine is down fails at once saying the engine is
//     unavailable, and no sandbox is left once the engine is back;
//   - without it, a restart stops the sandboxes: the running job ends in
//     error naming its sandbox's toolbox, and its sandbox is removed once
//     the engine answers again.
func TestFaultDockerdRestart(t *testing.T) {
	t.Parallel()
	for _, live := range []bool{true, false} {
		name := map[bool]string{true: "live-restore", false: "plain"}[live]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := startPrivateDockerd(t, live)
			ref := d.tinySandboxImage()
			s := dockerServer(t, d.host, "--max-concurrent", "2")
			for i, a := range s.args {
				if a == "--image-headless" {
					s.args[i+1] = ref
				}
			}
			s.start()
			const steps = 16
			id := s.schedule(fmt.Sprintf(`{"task": "through an engine restart [fake:steps=%d] [fake:delay=500ms]"}`, steps))
			for deadline := time.Now().Add(2 * time.Minute); s.status(id).Steps < 2; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) || s.status(id).Status.Terminal() {
					t.Fatalf("the job did not get going: %+v\n%s", s.status(id), s.logs)
				}
			}
			atKill := s.status(id).Steps
			down := time.Now()
			if live {
				d.crash()
				// A job that needs the engine while it is down.
				other := s.schedule(`{"task": "while the engine is down [fake:steps=1] [fake:delay=0s]"}`)
				j, _ := s.waitTerminal(other, 2*time.Minute)
				if j.Status != drydock.StatusError || j.Error == "" {
					t.Errorf("job scheduled while the engine was down: %s %q", j.Status, j.Error)
				}
				t.Logf("job scheduled while the engine was down ended %s: %s", j.Status, j.Error)
				time.Sleep(time.Second)
				d.start()
			} else {
				d.stop(syscall.SIGTERM)
				d.start()
			}
			t.Logf("engine down and back in %s (job at step %d of %d)", time.Since(down).Round(time.Millisecond), atKill, steps)

			j, seen := s.waitTerminal(id, 3*time.Minute)
			t.Logf("the running job ended %s after %d steps (seen %v) %q", j.Status, j.Steps, seen, j.Error)
			if live {
				if j.Status != drydock.StatusComplete || j.Steps != steps {
					t.Errorf("with live-restore the job must complete: %s steps=%d %q", j.Status, j.Steps, j.Error)
				}
			} else {
				if j.Status != drydock.StatusError || !strings.Contains(j.Error, "toolbox") {
					t.Errorf("without live-restore the job must fail naming its toolbox: %s %q", j.Status, j.Error)
				}
			}
			// Nothing of the server is left on the engine once it answers:
			// the runner removes the sandbox at the job's end, or the
			// reaper does within its minute.
			ended := time.Now()
			for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(500 * time.Millisecond) {
				left := engineSandboxes(t, d.host, map[string]string{drydock.LabelServer: s.node})
				if len(left) == 0 {
					t.Logf("no sandbox left on the engine %s after the job's end", time.Since(ended).Round(100*time.Millisecond))
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("sandboxes left on the engine: %v\n%s", left, s.logs)
				}
			}
		})
	}
}

// grepLines returns the lines of text that hold any of words.
func grepLines(text string, words ...string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
