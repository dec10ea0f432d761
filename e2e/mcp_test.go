package e2e_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mcpClient installs the official MCP TypeScript SDK for the test and
// returns the path of the client script beside it: a cache keyed by the
// lockfile, so that `npm ci` runs once and later runs work offline.
func mcpClient(t *testing.T) string {
	t.Helper()
	if os.Getenv("DRYDOCK_TEST_E2E") == "" {
		t.Skip("DRYDOCK_TEST_E2E not set: this test installs the MCP TypeScript SDK from the npm registry (make test sets it)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the MCP client test needs node >= 18 and npm (scripts/testenv/sandbox-tools.sh installs them)")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed: the MCP client test needs it to install @modelcontextprotocol/sdk")
	}
	out, err := exec.Command(node, "--version").Output()
	major, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), ".", 2)[0])
	if err != nil || major < 18 {
		t.Skipf("node %q is older than 18, which the MCP TypeScript SDK needs", strings.TrimSpace(string(out)))
	}
	src := filepath.Join("..", "mcp", "testdata", "client")
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "drydock", "mcp-client-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		// Installed beside and renamed into place, so that test runs of
		// several worktrees at once never see half an install.
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			t.Fatal(err)
		}
		tmp, err := os.MkdirTemp(filepath.Dir(dir), "mcp-client-install-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		copyFiles(t, src, tmp, "package.json", "package-lock.json")
		// The registry is the one npm is configured with; --prefer-offline
		// takes what npm's cache already holds.
		cmd := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline")
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci of the MCP TypeScript SDK: %v\n%s", err, out)
		}
		if err := os.Rename(tmp, dir); err != nil {
			if _, serr := os.Stat(dir); serr != nil {
				t.Fatalf("install the MCP client: %v", err)
			} // another run installed it first
		}
	}
	// Node resolves the SDK from the script's directory: the script goes
	// there under a name of its content's.
	script, err := os.ReadFile(filepath.Join(src, "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(script)
	name := "client-" + hex.EncodeToString(h[:8]) + ".mjs"
	if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
		f, err := os.CreateTemp(dir, "client-*.tmp")
		if err != nil {
			t.Fatal(err)
		}
		_, werr := f.Write(script)
		if cerr := f.Close(); werr != nil || cerr != nil {
			t.Fatal(werr, cerr)
		}
		if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, name)
}

func copyFiles(t *testing.T, from, to string, names ...string) {
	t.Helper()
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(from, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The official MCP TypeScript SDK, a client nobody here wrote, drives both
// transports against the real binary: stdio through `drydock mcp` and
// Streamable HTTP at /mcp, each with a token. It initialises and checks the
// capabilities, lists the tools, schedules a job with the scripted agent,
// follows it to completion with progress notifications, reads a file, the
// diff, the events and the resources, and gets errors for an unknown tool,
// bad arguments, an unknown job and a path traversal (client.mjs).
func TestMCPWithTheOfficialTypeScriptSDK(t *testing.T) {
	t.Parallel()
	script := mcpClient(t)
	s := newServer(t)
	token := createToken(t, s.dataDir, "mcp")
	s.start()
	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.CommandContext(ctxT(t, 4*time.Minute), "node", script, mode)
			cmd.Env = append(os.Environ(), "DRYDOCK_URL="+s.url(), "DRYDOCK_TOKEN="+token, "DRYDOCK_BIN="+binary)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "PASS "+mode) {
				t.Fatalf("the TypeScript MCP client over %s: %v\n%s", mode, err, out)
			}
			t.Logf("%s", out)
		})
	}
}
