package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/image"
)

// engines are the daemons the tests run against, each named by the
// environment variable scripts/testenv/{docker,podman}-up.sh print.
var engines = []struct{ name, env string }{
	{"docker", "DRYDOCK_TEST_DOCKER_HOST"},
	{"podman", "DRYDOCK_TEST_PODMAN_HOST"},
}

// sandboxKinds are the engines times the isolations a sandbox can run
// under: runc, the engines' default, and gVisor where the
// engine offers it. Docker takes gVisor per container (OCIRuntime runsc);
// Podman's Docker-compatible API ignores a container's runtime, so Podman
// under gVisor is a service of its own whose default runtime is runsc.
var sandboxKinds = []sandboxKind{
	{name: "docker", env: "DRYDOCK_TEST_DOCKER_HOST"},
	{name: "docker-gvisor", env: "DRYDOCK_TEST_DOCKER_HOST", ociRuntime: "runsc", gvisor: true},
	{name: "podman", env: "DRYDOCK_TEST_PODMAN_HOST"},
	{name: "podman-gvisor", env: "DRYDOCK_TEST_PODMAN_GVISOR_HOST", gvisor: true},
}

// sandboxKind is one engine under one isolation.
type sandboxKind struct {
	name, env string
	// ociRuntime is Options.OCIRuntime for the kind.
	ociRuntime string
	gvisor     bool
}

// require returns the kind's setup without an image, or skips the test
// when its engine or its gVisor is not there.
func (k sandboxKind) require(t testing.TB) setup {
	t.Helper()
	host := os.Getenv(k.env)
	if host == "" {
		if k.name == "podman-gvisor" {
			t.Skipf("%s is not set: no Podman service whose default runtime is gVisor's runsc (scripts/testenv/podman-up.sh starts one)", k.env)
		}
		t.Skipf("%s is not set; start an engine with scripts/testenv/docker-up.sh or podman-up.sh", k.env)
	}
	switch {
	case k.ociRuntime == "runsc":
		requireRunsc(t, host)
	case k.gvisor:
		requireDefaultRunsc(t, host)
	}
	return setup{host: host, ociRuntime: k.ociRuntime, gvisor: k.gvisor}
}

// forKinds runs f on every sandbox kind, in parallel, with the setup's
// image left for f to choose.
func forKinds(t *testing.T, f func(t *testing.T, s setup)) {
	for _, k := range sandboxKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			f(t, k.require(t))
		})
	}
}

// requireEngine returns the engine's address or skips the test.
func requireEngine(t testing.TB, env string) string {
	t.Helper()
	host := os.Getenv(env)
	if host == "" {
		t.Skipf("%s is not set; start an engine with scripts/testenv/docker-up.sh or podman-up.sh", env)
	}
	return host
}

// setup is what a test against one engine needs.
type setup struct {
	host  string
	image string
	// ociRuntime is Options.OCIRuntime ("runsc" for gVisor on Docker).
	ociRuntime string
	// gvisor says the sandboxes run under gVisor (on Podman, through the
	// service's default runtime).
	gvisor bool
}

// newRuntime returns a runtime on host with its own state dir, closed and
// checked for leftovers when the test ends.
func (s setup) newRuntime(t testing.TB) *Runtime {
	t.Helper()
	rt, err := New(Options{Host: s.host, ServerID: "test-" + t.Name(), StateDir: stateDir(t), OCIRuntime: s.ociRuntime})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if s.gvisor && s.ociRuntime == "" {
		// Podman's gVisor is its service's default runtime: the
		// runtime learns it as the server does, from a probe.
		img := s.image
		if img == "" {
			img = testImage(t, s.host)
		}
		if iso, _, err := rt.ResolveIsolation(t.Context(), ModeGVisor, img); err != nil || iso != drydock.IsolationGVisor {
			t.Fatalf("isolation on %s: %q %v; want gVisor", s.host, iso, err)
		}
	}
	return rt
}

// stateDirs gives every test one state dir shared by all runtimes it makes,
// as the runtimes of one orchestrator share theirs across restarts. A short
// path: unix socket paths must fit in 108 bytes.
var stateDirs sync.Map

func stateDir(t testing.TB) string {
	root := t
	if v, ok := stateDirs.Load(root.Name()); ok {
		return v.(string)
	}
	dir, err := os.MkdirTemp("", "dd-rt-")
	if err != nil {
		t.Fatal(err)
	}
	v, loaded := stateDirs.LoadOrStore(root.Name(), dir)
	if loaded {
		os.Remove(dir)
		return v.(string)
	}
	t.Cleanup(func() {
		// Every sandbox must have removed its own directory.
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			t.Errorf("state dir %s left behind after the test", e.Name())
		}
		os.RemoveAll(dir)
		stateDirs.Delete(root.Name())
	})
	return dir
}

var testImages sync.Map // host and package -> *imageOnce

type imageOnce struct {
	once sync.Once
	ref  string
	err  error
}

// testImage imports, once per engine, a tiny sandbox image: busybox for a
// shell and the test health server as toolboxd, configured with the same
// import changes as the real image. It takes about a second, where the real
// image takes minutes.
func testImage(t testing.TB, host string) string {
	t.Helper()
	return busyboxImage(t, host, "../runtimetest/testdata/healthd")
}

// toolboxdImage is testImage with the real toolboxd of this tree, for
// tests of its API; without bash, its shell component never gets ready.
func toolboxdImage(t testing.TB, host string) string {
	t.Helper()
	return busyboxImage(t, host, "../../cmd/toolboxd")
}

func busyboxImage(t testing.TB, host, pkg string) string {
	t.Helper()
	if _, err := exec.LookPath("busybox"); err != nil {
		t.Skip("busybox is not installed (apt-get install busybox-static; scripts/testenv/docker-up.sh does)")
	}
	v, _ := testImages.LoadOrStore(host+"\x00"+pkg, &imageOnce{})
	o := v.(*imageOnce)
	o.once.Do(func() { o.ref, o.err = importTestImage(host, pkg) })
	if o.err != nil {
		t.Fatalf("test image: %v", o.err)
	}
	return o.ref
}

func importTestImage(host, pkg string) (string, error) {
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		return "", fmt.Errorf("busybox not found (apt-get install busybox-static): %w", err)
	}
	if out, _ := exec.Command("file", "-L", busybox).Output(); len(out) > 0 && !bytes.Contains(out, []byte("statically linked")) {
		return "", fmt.Errorf("%s is not static (apt-get install busybox-static)", busybox)
	}
	dir, err := os.MkdirTemp("", "dd-healthd-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	healthd := filepath.Join(dir, "healthd")
	cmd := exec.Command("go", "build", "-o", healthd, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build healthd: %v\n%s", err, out)
	}
	applets, err := exec.Command(busybox, "--list-full").Output()
	if err != nil {
		return "", fmt.Errorf("busybox --list-full: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	h := sha256.New()
	dirMode := map[string]int64{"bin": 0o755, "sbin": 0o755, "usr": 0o755, "usr/bin": 0o755, "usr/sbin": 0o755,
		"usr/local": 0o755, "usr/local/bin": 0o755, "etc": 0o755, "tmp": 0o1777, "root": 0o700, "home": 0o755,
		"proc": 0o555, "sys": 0o555, "dev": 0o755, "run": 0o755}
	for _, d := range []string{"bin", "sbin", "usr", "usr/bin", "usr/sbin", "usr/local", "usr/local/bin", "etc", "tmp", "root", "home", "proc", "sys", "dev", "run"} {
		tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: dirMode[d], ModTime: time.Unix(0, 0)})
	}
	for _, d := range []string{"home/agent", "workspace", "run/toolbox"} {
		tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755, Uid: 1000, Gid: 1000, ModTime: time.Unix(0, 0)})
	}
	addFile := func(name string, data []byte, mode int64) {
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(data)), ModTime: time.Unix(0, 0)})
		tw.Write(data)
		fmt.Fprintf(h, "%s %x\n", name, sha256.Sum256(data))
	}
	for _, f := range []struct{ src, dst string }{{busybox, "bin/busybox"}, {healthd, "usr/local/bin/toolboxd"}} {
		data, err := os.ReadFile(f.src)
		if err != nil {
			return "", err
		}
		addFile(f.dst, data, 0o755)
	}
	addFile("etc/passwd", []byte("root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000::/home/agent:/bin/sh\n"), 0o644)
	addFile("etc/group", []byte("root:x:0:\nagent:x:1000:\n"), 0o644)
	for _, a := range strings.Fields(string(applets)) {
		if a == "bin/busybox" || a == "usr/local/bin/toolboxd" {
			continue
		}
		tw.WriteHeader(&tar.Header{Name: a, Typeflag: tar.TypeSymlink, Linkname: "/bin/busybox", Mode: 0o777, ModTime: time.Unix(0, 0)})
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	for _, c := range image.Changes(drydock.ProfileHeadless) {
		fmt.Fprintf(h, "%s\n", c)
	}
	ref := "drydock-test-sandbox:" + hex.EncodeToString(h.Sum(nil))[:12]

	cli, err := image.NewClient(host)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		return ref, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", err
	}
	res, err := cli.ImageImport(ctx, client.ImageImportSource{Source: &buf, SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: image.Changes(drydock.ProfileHeadless)})
	if err != nil {
		return "", fmt.Errorf("import: %w", err)
	}
	out, _ := io.ReadAll(res)
	res.Close()
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		return "", fmt.Errorf("import of %s: %v; engine said %s", ref, err, out)
	}
	return ref, nil
}

// execResult is the outcome of a command run in a sandbox.
type execResult struct {
	stdout, stderr string
	exit           int
}

// execIn runs argv in the sandbox as its default user (uid 1000), through the
// engine's exec API.
func execIn(ctx context.Context, t testing.TB, cli *client.Client, id string, argv ...string) execResult {
	t.Helper()
	r, err := tryExec(ctx, cli, id, argv...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func tryExec(ctx context.Context, cli *client.Client, id string, argv ...string) (execResult, error) {
	ex, err := cli.ExecCreate(ctx, id, client.ExecCreateOptions{AttachStdout: true, AttachStderr: true, Cmd: argv})
	if err != nil {
		return execResult{}, fmt.Errorf("exec %v: %w", argv, err)
	}
	att, err := cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return execResult{}, fmt.Errorf("exec attach %v: %w", argv, err)
	}
	defer att.Close()
	var stdout, stderr bytes.Buffer
	if _, err := stdcopy.StdCopy(&stdout, &stderr, att.Reader); err != nil {
		return execResult{}, fmt.Errorf("exec output %v: %w", argv, err)
	}
	for {
		res, err := cli.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
		if err != nil {
			return execResult{}, fmt.Errorf("exec inspect %v: %w", argv, err)
		}
		if !res.Running {
			return execResult{stdout: stdout.String(), stderr: stderr.String(), exit: res.ExitCode}, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sh runs a shell script in the sandbox.
func sh(ctx context.Context, t testing.TB, cli *client.Client, id, script string) execResult {
	t.Helper()
	return execIn(ctx, t, cli, id, "sh", "-c", script)
}
