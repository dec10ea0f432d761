package sdk_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The SDKs' own suites (sdk/typescript/test, sdk/python/tests) run against
// a real server: the drydock binary with the local runtime and the scripted
// agent, with an API token, so that every request of the suites crosses the
// real authentication, boundary checks and handlers.

// requireE2E skips unless the slow, process-starting suites are asked for.
func requireE2E(t *testing.T) {
	t.Helper()
	if os.Getenv("DRYDOCK_TEST_E2E") == "" {
		t.Skip("set DRYDOCK_TEST_E2E=1 to run the SDKs' suites against a real server (make test does)")
	}
}

// requireNode skips without node and npm.
func requireNode(t *testing.T) {
	t.Helper()
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed (scripts/testenv/sandbox-tools.sh installs it)", bin)
		}
	}
}

// requirePython returns a python3 that can import httpx, or skips.
func requirePython(t *testing.T) string {
	t.Helper()
	// Debian's python3-httpx is installed for /usr/bin/python3, which a
	// python3 earlier on PATH (pyenv, a venv) may not see.
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		bin, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		if exec.Command(bin, "-c", "import httpx").Run() == nil {
			return bin
		}
	}
	t.Skip("no python3 with httpx (apt-get install python3-httpx; make test installs it)")
	return ""
}

var (
	npmOnce sync.Once
	npmDir  string
	npmTemp bool // npmDir is a temporary install, removed after the tests
	npmErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if npmTemp {
		os.RemoveAll(npmDir)
	}
	os.Exit(code)
}

// typescriptTools returns a directory whose node_modules holds the SDK's
// pinned dev tools (openapi-typescript, typescript): sdk/typescript itself
// when `npm ci` ran there, else a temporary one installed from the lockfile.
func typescriptTools(t *testing.T) string {
	t.Helper()
	requireNode(t)
	npmOnce.Do(func() {
		if _, err := os.Stat("typescript/node_modules/.bin/openapi-typescript"); err == nil {
			npmDir, npmErr = filepath.Abs("typescript")
			return
		}
		dir, err := os.MkdirTemp("", "drydock-sdk-npm")
		if err != nil {
			npmErr = err
			return
		}
		npmDir, npmTemp = dir, true // removed by TestMain even when npm ci fails
		for _, f := range []string{"package.json", "package-lock.json", ".npmrc"} {
			b, err := os.ReadFile(filepath.Join("typescript", f))
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, f), b, 0o644)
			}
			if err != nil {
				npmErr = err
				return
			}
		}
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			npmErr = fmt.Errorf("npm ci: %v\n%s", err, out)
			return
		}
		npmDir, npmTemp = dir, true
	})
	if npmErr != nil {
		if os.Getenv("DRYDOCK_TEST_E2E") == "" {
			t.Skipf("the SDK's npm tools could not be installed (no registry?): %v", npmErr)
		}
		t.Fatalf("install the TypeScript SDK's tools from its lockfile: %v", npmErr)
	}
	return npmDir
}

// server is a drydock server with one API token.
type server struct {
	url, token string
}

func startServer(t *testing.T) *server {
	t.Helper()
	bin := os.Getenv("DRYDOCK_TEST_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "drydock")
		cmd := exec.Command("go", "build", "-o", bin, "../cmd/drydock")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build drydock: %v\n%s", err, out)
		}
	}
	data := t.TempDir()
	env := append(os.Environ(), "DRYDOCK_TOKEN=", "DRYDOCK_URL=", "DRYDOCK_DATA_DIR=")
	cmd := exec.Command(bin, "token", "create", "--data-dir", data, "--name", "sdk", "--json")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("drydock token create: %v", err)
	}
	var tok struct{ Token string }
	if err := json.Unmarshal(out, &tok); err != nil || tok.Token == "" {
		t.Fatalf("drydock token create printed %q: %v", out, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs bytes.Buffer
	var mu sync.Mutex
	// Each suite keeps a hanging job and a held sandbox running while its
	// other tests schedule more: two slots (the default) would starve them.
	srv := exec.Command(bin, "server", "--listen", addr, "--data-dir", data, "--runtime", "local", "--agent", "fake", "--max-concurrent", "6",
		"--node-id", fmt.Sprintf("sdk-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-")))
	srv.Env = env
	srv.Stdout, srv.Stderr = lockedWriter{&mu, &logs}, lockedWriter{&mu, &logs}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	t.Cleanup(func() {
		srv.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			srv.Process.Kill()
			<-done
		}
		if t.Failed() {
			mu.Lock()
			t.Logf("server log:\n%s", logs.String())
			mu.Unlock()
		}
	})
	s := &server{url: "http://" + addr, token: tok.Token}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("server exited: %v\n%s", err, logs.String())
		default:
		}
		if resp, err := http.Get(s.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
	}
	t.Fatalf("server not ready in 20s")
	return nil
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// uploadFixture writes a tar.gz holding hello.txt, the workspace the suites
// upload.
func uploadFixture(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	body := []byte("hello from an upload\n")
	if err := tw.WriteHeader(&tar.Header{Name: "hello.txt", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw.Write(body)
	tw.Close()
	gz.Close()
	p := filepath.Join(t.TempDir(), "workspace.tar.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func suiteEnv(s *server, upload string) []string {
	return append(os.Environ(), "DRYDOCK_URL="+s.url, "DRYDOCK_TOKEN="+s.token, "DRYDOCK_SDK_UPLOAD="+upload)
}

func TestTypeScriptSDK(t *testing.T) {
	requireE2E(t)
	tools := typescriptTools(t)
	out := t.TempDir()
	tsc := exec.Command(filepath.Join(tools, "node_modules", ".bin", "tsc"), "-p", "typescript/tsconfig.json", "--outDir", out)
	if b, err := tsc.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, b)
	}
	s := startServer(t)
	cmd := exec.Command("node", "--test", "--test-reporter=spec", "typescript/test/client.test.mjs")
	cmd.Env = append(suiteEnv(s, uploadFixture(t)), "DRYDOCK_SDK_MODULE="+filepath.Join(out, "index.js"))
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, b)
	}
	if bytes.Contains(b, []byte("DRYDOCK_URL is not set")) || !bytes.Contains(b, []byte("skipped 0")) {
		t.Fatalf("the TypeScript suite did not run whole:\n%s", b)
	}
	t.Logf("%s", lastLines(b, 12))
}

func TestPythonSDK(t *testing.T) {
	requireE2E(t)
	py := requirePython(t)
	s := startServer(t)
	cmd := exec.Command(py, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	cmd.Dir = "python"
	cmd.Env = append(suiteEnv(s, uploadFixture(t)), "PYTHONDONTWRITEBYTECODE=1")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s", err, b)
	}
	if !bytes.Contains(b, []byte("\nOK")) || bytes.Contains(b, []byte("skipped")) {
		t.Fatalf("the Python suite did not run whole:\n%s", b)
	}
	t.Logf("%s", lastLines(b, 4))
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestPythonSDKTypeChecks runs mypy --strict on the library (its methods'
// return types are what users' type checkers see) and on the suite (which
// uses the SDK as a user would).
func TestPythonSDKTypeChecks(t *testing.T) {
	py := requirePython(t)
	if exec.Command(py, "-m", "mypy", "--version").Run() != nil {
		t.Skip("mypy is not installed (apt-get install mypy; make test installs it)")
	}
	cmd := exec.Command(py, "-m", "mypy", "--strict", "--cache-dir", t.TempDir(), "drydock", "tests")
	cmd.Dir = "python"
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("mypy --strict: %v\n%s", err, b)
	}
}
