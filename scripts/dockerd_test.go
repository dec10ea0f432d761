// Package scripts_test checks the shell scripts behind make run and make
// stop against a fake dockerd: this test binary, copied under that name,
// serving the few Engine API calls the scripts make on a unix socket.
package scripts_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The fake engine's one sandbox container, which make stop must remove.
const sandboxID = "0123456789abcdef0123456789abcdef"

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "dockerd" {
		fakeDockerd(os.Args[1:])
		return
	}
	os.Exit(m.Run())
}

// fakeDockerd records its arguments and what it was asked in
// $FAKE_DOCKERD_DIR, writes its pid to --pidfile as dockerd does, and
// answers _ping, the container list and container removal until SIGTERM.
func fakeDockerd(args []string) {
	dir := os.Getenv("FAKE_DOCKERD_DIR")
	record := func(name, line string) {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
	record("args", strings.Join(args, "\n"))
	var host, pidfile, config string
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--host":
			host = args[i+1]
		case "--pidfile":
			pidfile = args[i+1]
		case "--config-file":
			config = args[i+1]
		}
	}
	// Like dockerd, refuse a config file that is not JSON, and list the
	// runtimes it registers (beside runc) in /info.
	runtimes := map[string]any{"runc": map[string]any{"path": "runc"}}
	if config != "" {
		var cfg struct {
			Runtimes map[string]any `json:"runtimes"`
		}
		b, err := os.ReadFile(config)
		if err == nil {
			err = json.Unmarshal(b, &cfg)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "config file:", err)
			os.Exit(1)
		}
		maps.Copy(runtimes, cfg.Runtimes)
	}
	l, err := net.Listen("unix", strings.TrimPrefix(host, "unix://"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(pidfile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_ping", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "OK") })
	mux.HandleFunc("GET /info", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"Runtimes": runtimes, "LiveRestoreEnabled": true})
	})
	mux.HandleFunc("GET /containers/json", func(w http.ResponseWriter, r *http.Request) {
		record("requests", "list "+r.URL.Query().Get("filters"))
		fmt.Fprintf(w, `[{"Id":%q,"Labels":{"drydock.managed":"true"}}]`, sandboxID)
	})
	mux.HandleFunc("DELETE /containers/{id}", func(w http.ResponseWriter, r *http.Request) {
		record("requests", "delete "+r.PathValue("id")+" force="+r.URL.Query().Get("force"))
		w.WriteHeader(http.StatusNoContent)
	})
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	go http.Serve(l, mux)
	<-stop
	record("requests", "stopped")
	l.Close()
}

type env struct {
	dir, runDir, sock string
	vars              []string
}

func setup(t *testing.T) *env {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed; the scripts talk to the engine with it")
	}
	// A short directory: a unix socket path holds at most 107 bytes.
	dir, err := os.MkdirTemp("", "dd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "dockerd"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	// A stand-in for gVisor's runsc: registering it checks who can replace it.
	if err := os.WriteFile(filepath.Join(dir, "runsc"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := &env{dir: dir, runDir: filepath.Join(dir, "run"), sock: filepath.Join(dir, "d.sock")}
	e.vars = append(os.Environ(),
		"PATH="+bin+":"+os.Getenv("PATH"),
		"DRYDOCK_RUN_DIR="+e.runDir,
		"DOCKERD_LOG="+filepath.Join(dir, "dockerd.log"),
		"FAKE_DOCKERD_DIR="+dir,
		// gVisor: a runsc that needs no build, and no operator's
		// daemon.json unless a test writes one.
		"DRYDOCK_RUNSC_PATH="+filepath.Join(dir, "runsc"),
		"DOCKERD_SYSTEM_CONFIG="+filepath.Join(dir, "etc-daemon.json"),
		"DRYDOCK_ISOLATION=",
	)
	return e
}

// sh runs a command in the repository's root with the scripts' helpers
// loaded, and returns what it printed.
func (e *env) sh(t *testing.T, script string) string {
	t.Helper()
	cmd := exec.Command("bash", "-c", ". scripts/lib.sh && "+script)
	cmd.Dir = ".."
	cmd.Env = e.vars
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}

func (e *env) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(e.dir, name))
	return string(b)
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	return err == nil && !strings.Contains(string(b), "State:\tZ")
}

// make run's own dockerd keeps jobs through engine restarts
// (--live-restore), says how to stop it, and make stop stops it after
// removing the sandboxes that --live-restore would leave running.
func TestMakeRunDockerdHasLiveRestoreAndMakeStopStopsIt(t *testing.T) {
	e := setup(t)
	out := e.sh(t, "start_dockerd unix://"+e.sock)

	args := strings.Split(strings.TrimSpace(e.read("args")), "\n")
	if !slices.Contains(args, "--live-restore") {
		t.Errorf("dockerd started without --live-restore: %q", args)
	}
	pidfile := filepath.Join(e.runDir, "dockerd.pid")
	if i := slices.Index(args, "--pidfile"); i < 0 || i+1 >= len(args) || args[i+1] != pidfile {
		t.Errorf("dockerd's pidfile is not %s: %q", pidfile, args)
	}
	if !strings.Contains(out, "make stop") {
		t.Errorf("start_dockerd does not say how to stop dockerd:\n%s", out)
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatalf("no pidfile: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if !alive(pid) {
		t.Fatalf("dockerd pid %d is not running", pid)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })

	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed; make stop needs it")
	}
	cmd := exec.Command("make", "-s", "stop")
	cmd.Dir = ".."
	cmd.Env = e.vars
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make stop: %v\n%s", err, out)
	}
	if alive(pid) {
		t.Errorf("make stop left dockerd (pid %d) running", pid)
	}
	reqs := strings.Split(strings.TrimSpace(e.read("requests")), "\n")
	want := []string{`list {"label":["drydock.managed=true"]}`, "delete " + sandboxID + " force=1", "stopped"}
	if !slices.Equal(reqs, want) {
		t.Errorf("the engine was asked\n%q\nwant (the sandbox removed before the engine stops)\n%q", reqs, want)
	}
	if _, err := os.Stat(pidfile); !os.IsNotExist(err) {
		t.Errorf("make stop left the pidfile: %v", err)
	}
}

// A pidfile whose pid now belongs to another process (the engine died, the
// pid was reused) must not make make stop kill that process.
func TestMakeStopLeavesOtherProcessesAlone(t *testing.T) {
	e := setup(t)
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	os.MkdirAll(e.runDir, 0o755)
	os.WriteFile(filepath.Join(e.runDir, "dockerd.pid"), []byte(strconv.Itoa(other.Process.Pid)), 0o644)

	out := e.sh(t, "stop_dockerd")
	if !alive(other.Process.Pid) {
		t.Fatalf("stop_dockerd killed pid %d, which is not the dockerd make run started", other.Process.Pid)
	}
	if !strings.Contains(out, "left alone") {
		t.Errorf("stop_dockerd does not say it stopped nothing:\n%s", out)
	}
}

var runsDockerd = regexp.MustCompile(`(^|[;&|(]|\bnohup|\bexec|\bthen|\belse|\bdo)\s*dockerd\b`)

// make run starts an engine only through start_dockerd, so what the tests
// above check is what make run does.
func TestRunStartsDockerdOnlyThroughStartDockerd(t *testing.T) {
	b, err := os.ReadFile("run.sh")
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		if runsDockerd.MatchString(line) {
			t.Errorf("run.sh:%d runs dockerd itself: %s", i+1, line)
		}
	}
	if !strings.Contains(string(b), `start_dockerd "$SOCK"`) {
		t.Error("run.sh does not start its engine with start_dockerd")
	}
}
