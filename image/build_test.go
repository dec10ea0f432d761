package image

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drydockhq/drydock"
)

func TestPackages(t *testing.T) {
	t.Parallel()
	headless := Packages(drydock.ProfileHeadless)
	desktop := Packages(drydock.ProfileDesktop)
	for _, want := range []string{"python3", "python3-ipykernel", "python3-jupyter-server", "python3-tk", "git", "build-essential", "curl", "ca-certificates"} {
		if !slices.Contains(headless, want) {
			t.Errorf("headless packages lack %s", want)
		}
		if !slices.Contains(desktop, want) {
			t.Errorf("desktop packages lack %s", want)
		}
	}
	// Debian's Node 18 is too old for current web tooling, and its
	// node-typescript would pull it in: both come from npm.txt instead.
	for _, old := range []string{"nodejs", "node-typescript", "npm"} {
		if slices.Contains(desktop, old) {
			t.Errorf("packages include Debian's %s; Node.js, npm and TypeScript come from npm.txt", old)
		}
	}
	for _, want := range []string{"xvfb", "fluxbox", "x11vnc", "xdotool", "imagemagick", "chromium"} {
		if !slices.Contains(desktop, want) {
			t.Errorf("desktop packages lack %s", want)
		}
		if slices.Contains(headless, want) {
			t.Errorf("headless packages include desktop package %s", want)
		}
	}
}

// The Dockerfile builds the same image for users with a registry; its
// configuration lines must match what the importer applies.
func TestDockerfileMatchesChanges(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The configuration is what follows the copy of toolboxd into the
	// final stage.
	var got []string
	configuring := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "COPY --from=toolboxd ") {
			configuring = true
			continue
		}
		if !configuring {
			continue
		}
		for _, kw := range []string{"USER ", "WORKDIR ", "ENV ", "LABEL ", "ENTRYPOINT "} {
			if strings.HasPrefix(line, kw) {
				got = append(got, line)
			}
		}
	}
	want := Changes("${PROFILE}")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Dockerfile configuration differs from Changes (-want +got):\n%s", diff)
	}
}

// A base image keeps every ENV it was imported with, so configuration that
// changes must name another base, while the same inputs name the same one.
func TestBaseTagCoversConfiguration(t *testing.T) {
	t.Parallel()
	changes := Changes(drydock.ProfileHeadless)
	a := baseTag(drydock.ProfileHeadless, "0123abcd", changes)
	if b := baseTag(drydock.ProfileHeadless, "0123abcd", slices.Clone(changes)); a != b {
		t.Errorf("same inputs: %s and %s", a, b)
	}
	if b := baseTag(drydock.ProfileHeadless, "0123abcd", changes[:len(changes)-1]); a == b {
		t.Errorf("a dropped configuration line kept the base %s", a)
	}
	if b := baseTag(drydock.ProfileHeadless, "4567ef01", changes); a == b {
		t.Errorf("another rootfs kept the base %s", a)
	}
}

func TestCheckStatic(t *testing.T) {
	t.Parallel()
	if err := checkStatic(""); drydock.ErrorCode(err) != drydock.EINVALID {
		t.Errorf("empty path: got %v, want EINVALID", err)
	}
	if runtime.GOOS == "linux" {
		// The test binary itself links libc on most hosts only with cgo;
		// /bin/sh is always dynamic on Debian.
		if err := checkStatic("/bin/sh"); drydock.ErrorCode(err) != drydock.EINVALID {
			t.Errorf("/bin/sh: got %v, want EINVALID for a dynamic binary", err)
		}
	}
	static := buildStatic(t, "../runtime/runtimetest/testdata/healthd")
	if err := checkStatic(static); err != nil {
		t.Errorf("static binary refused: %v", err)
	}
}

func buildStatic(t *testing.T, pkg string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// TestBuild runs the real build: mmdebstrap takes minutes the first time, so
// it only runs when DRYDOCK_TEST_IMAGE_BUILD names a profile and
// DRYDOCK_TEST_DOCKER_HOST an engine. DRYDOCK_TEST_TOOLBOXD may name the
// toolboxd to install; the default builds ./cmd/toolboxd, since the build
// retags drydock-sandbox:<profile>, which other tests run.
func TestBuild(t *testing.T) {
	profile := drydock.Profile(os.Getenv("DRYDOCK_TEST_IMAGE_BUILD"))
	host := os.Getenv("DRYDOCK_TEST_DOCKER_HOST")
	if profile == "" || host == "" {
		t.Skip("set DRYDOCK_TEST_IMAGE_BUILD=headless|desktop and DRYDOCK_TEST_DOCKER_HOST to build the image")
	}
	toolboxd := os.Getenv("DRYDOCK_TEST_TOOLBOXD")
	if toolboxd == "" {
		toolboxd = buildStatic(t, "../cmd/toolboxd")
	}
	opts := Options{
		Profile: profile, Toolboxd: toolboxd, DockerHost: host,
		CacheDir: os.Getenv("DRYDOCK_TEST_IMAGE_CACHE"), Progress: tWriter{t},
	}
	ref, err := Build(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s", ref)

	// Unchanged inputs: a no-op.
	start := time.Now()
	again, err := Build(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if again != ref {
		t.Errorf("rebuild gave %s, want %s", again, ref)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("no-op rebuild took %v", d)
	}
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
