package scripts_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// startDockerd runs start_dockerd and check_gvisor with the fake engine
// under run.sh's shell options (any failing step would end make run), and
// returns what they printed and the arguments dockerd got; the fake is
// killed at the end.
func (e *env) startDockerd(t *testing.T) (string, []string) {
	t.Helper()
	out := e.sh(t, "set -euo pipefail; start_dockerd unix://"+e.sock+"; check_gvisor unix://"+e.sock+"; echo make-run-goes-on")
	if !strings.Contains(out, "make-run-goes-on") {
		t.Fatalf("make run would stop here:\n%s", out)
	}
	b, err := os.ReadFile(filepath.Join(e.runDir, "dockerd.pid"))
	if err != nil {
		t.Fatalf("no pidfile: %v\n%s", err, out)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return out, strings.Split(strings.TrimSpace(e.read("args")), "\n")
}

// configFile is the --config-file dockerd was started with, "" for none.
func configFile(args []string) string {
	if i := slices.Index(args, "--config-file"); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// A new user's make run registers gVisor's runsc in the dockerd it starts,
// with --host-uds=all, so the server's --isolation auto runs sandboxes
// under gVisor.
func TestMakeRunDockerdRegistersRunsc(t *testing.T) {
	e := setup(t)
	out, args := e.startDockerd(t)
	cfg := configFile(args)
	if cfg == "" {
		t.Fatalf("dockerd started without a --config-file: %q\n%s", args, out)
	}
	var v struct {
		Runtimes map[string]struct {
			Path        string   `json:"path"`
			RuntimeArgs []string `json:"runtimeArgs"`
		} `json:"runtimes"`
	}
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s is not JSON: %v\n%s", cfg, err, b)
	}
	rs, ok := v.Runtimes["runsc"]
	if !ok || rs.Path != filepath.Join(e.dir, "runsc") || !slices.Equal(rs.RuntimeArgs, []string{"--host-uds=all"}) {
		t.Errorf("runtimes in %s: %+v", cfg, v.Runtimes)
	}
	if !strings.Contains(out, "sandboxes run under gVisor") {
		t.Errorf("make run does not say the sandboxes get gVisor:\n%s", out)
	}
}

// The operator's daemon.json is neither rewritten nor dropped for one of
// ours: dockerd reads it, and make run prints the exact key to add and goes
// on under runc.
func TestMakeRunKeepsTheOperatorsDaemonJSON(t *testing.T) {
	e := setup(t)
	sys := filepath.Join(e.dir, "etc-daemon.json")
	const mine = "{\"log-level\": \"warn\"}\n"
	if err := os.WriteFile(sys, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	out, args := e.startDockerd(t)
	if cfg := configFile(args); cfg != "" {
		t.Errorf("dockerd started with %s instead of the operator's %s", cfg, sys)
	}
	if b, _ := os.ReadFile(sys); string(b) != mine {
		t.Errorf("the operator's daemon.json was rewritten:\n%s", b)
	}
	line := `"runtimes": {"runsc": {"path": "` + filepath.Join(e.dir, "runsc") + `", "runtimeArgs": ["--host-uds=all"]}}`
	if !strings.Contains(out, line) || !strings.Contains(out, sys) || !strings.Contains(out, "run under runc") {
		t.Errorf("make run does not say what to add to %s:\n%s", sys, out)
	}
	// What it prints is a valid key of a JSON object.
	var v map[string]any
	if err := json.Unmarshal([]byte("{"+line+"}"), &v); err != nil {
		t.Errorf("the printed key is not JSON: %v", err)
	}
}

// Without a Go module proxy runsc cannot be built: make run warns and
// starts its dockerd anyway, sandboxes under runc.
func TestRunscBuildFailureDoesNotStopMakeRun(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
			t.Skip("no Go toolchain: ensure_runsc would fail before building")
		}
	}
	e := setup(t)
	cache := t.TempDir()
	e.vars = append(e.vars, "DRYDOCK_RUNSC_PATH=", "XDG_CACHE_HOME="+cache,
		"GOPROXY=off", "GOMODCACHE="+filepath.Join(cache, "mod"), "GOFLAGS=")
	out, args := e.startDockerd(t)
	if cfg := configFile(args); cfg != "" {
		b, _ := os.ReadFile(cfg)
		if strings.Contains(string(b), "runsc") {
			t.Errorf("a runsc that was not built is registered: %s", b)
		}
	}
	if !strings.Contains(out, "runsc could not be built") || !strings.Contains(out, "run under runc") {
		t.Errorf("make run does not warn that gVisor is missing:\n%s", out)
	}
}

// An engine make run did not start (a system dockerd) keeps its
// configuration: without runsc, make run prints the key to add and how to
// reload; with it, it says the sandboxes get gVisor.
func TestSystemEngineGetsTheLinesNotAnEdit(t *testing.T) {
	e := setup(t)
	// Start the fake engine by hand, as an operator's dockerd.
	other := filepath.Join(e.dir, "o.sock")
	cmd := exec.Command(filepath.Join(e.dir, "bin", "dockerd"), "--host", "unix://"+other, "--pidfile", filepath.Join(e.dir, "o.pid"))
	cmd.Env = e.vars
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	e.sh(t, "for i in $(seq 100); do engine_answers unix://"+other+" && exit 0; sleep 0.1; done; exit 1")

	out := e.sh(t, "check_gvisor unix://"+other)
	if !strings.Contains(out, `"runtimes": {"runsc": {"path": "`+filepath.Join(e.dir, "runsc")+`"`) || !strings.Contains(out, "systemctl reload docker") {
		t.Errorf("no lines to add for a system engine without runsc:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "etc-daemon.json")); !os.IsNotExist(err) {
		t.Errorf("make run wrote the system engine's daemon.json: %v", err)
	}

	// DRYDOCK_ISOLATION=runc: the operator chose runc, nothing to add.
	e.vars = append(e.vars, "DRYDOCK_ISOLATION=runc")
	if out := e.sh(t, "check_gvisor unix://"+other); strings.Contains(out, "runtimes") {
		t.Errorf("advice printed although the operator chose runc:\n%s", out)
	}
}

// lib.sh is sourced by POSIX sh scripts too (scripts/testenv/docker-up.sh):
// a bash-only construct anywhere in it breaks them all.
func TestLibParsesUnderPosixSh(t *testing.T) {
	sh, err := exec.LookPath("dash")
	if err != nil {
		t.Skip("dash is not installed: no strict POSIX sh to parse lib.sh with")
	}
	if out, err := exec.Command(sh, "-n", "lib.sh").CombinedOutput(); err != nil {
		t.Errorf("lib.sh does not parse under %s: %v\n%s", sh, err, out)
	}
}

// make run says which isolation its engine gives, whichever engine it is.
func TestRunChecksGVisor(t *testing.T) {
	b, err := os.ReadFile("run.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `check_gvisor "$SOCK"`) {
		t.Error("run.sh does not check the engine's gVisor with check_gvisor")
	}
}

// A daemon.json that cannot be written leaves gVisor out, says so, and
// does not stop make run.
func TestUnwritableDaemonJSONDoesNotStopMakeRun(t *testing.T) {
	e := setup(t)
	if err := os.MkdirAll(filepath.Join(e.runDir, "daemon.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, args := e.startDockerd(t)
	if cfg := configFile(args); cfg != "" {
		t.Errorf("dockerd got --config-file %s, which could not be written", cfg)
	}
	if !strings.Contains(out, "could not write") || !strings.Contains(out, "run under runc") {
		t.Errorf("no warning that gVisor is left out:\n%s", out)
	}
}

// dockerd runs its runtimes as root: a runsc that another user could
// replace (a cache under a HOME that sudo -E kept) is not registered.
func TestRunscOthersCanReplaceIsNotRegistered(t *testing.T) {
	e := setup(t)
	shared := filepath.Join(e.dir, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o777) // past the umask
	runsc := filepath.Join(shared, "runsc")
	if err := os.WriteFile(runsc, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.vars = append(e.vars, "DRYDOCK_RUNSC_PATH="+runsc)
	out, args := e.startDockerd(t)
	if cfg := configFile(args); cfg != "" {
		t.Errorf("a runsc in a world-writable directory was registered in %s", cfg)
	}
	if !strings.Contains(out, "another user") || !strings.Contains(out, "run under runc") {
		t.Errorf("no warning:\n%s", out)
	}
}

func TestOwnerOnly(t *testing.T) {
	e := setup(t)
	mk := func(path string, mode os.FileMode) string {
		t.Helper()
		p := filepath.Join(e.dir, path)
		if strings.HasSuffix(path, "/") {
			os.MkdirAll(p, 0o755)
		} else if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	mk("ok/", 0o755)
	mk("sticky/", os.ModeSticky|0o777)
	mk("open/", 0o777)
	mk("group/", 0o775)
	cases := map[string]bool{
		mk("ok/runsc", 0o755):                 true,
		mk("sticky/runsc", 0o755):             true, // like /tmp: only its owner replaces it
		mk("open/runsc", 0o755):               false,
		mk("group/runsc", 0o755):              false,
		mk("ok/writable", 0o757):              false,
		mk("ok/gwritable", 0o775):             false,
		filepath.Join(e.dir, "ok", "missing"): false,
	}
	other := mk("ok/other", 0o755)
	if err := os.Chown(other, 65534, 65534); err == nil {
		cases[other] = false
	}
	if err := os.Symlink(filepath.Join(e.dir, "open", "runsc"), filepath.Join(e.dir, "ok", "link")); err == nil {
		cases[filepath.Join(e.dir, "ok", "link")] = false // judged by where it leads
	}
	for p, want := range cases {
		cmd := exec.Command("bash", "-c", ". scripts/lib.sh && owner_only \"$1\"", "sh", p)
		cmd.Dir = ".."
		err := cmd.Run()
		if got := err == nil; got != want {
			t.Errorf("owner_only %s = %v, want %v", strings.TrimPrefix(p, e.dir), got, want)
		}
	}
}
