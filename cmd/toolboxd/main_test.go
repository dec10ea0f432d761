package main

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/oomscore"
	"github.com/drydockhq/drydock/toolbox"
)

// The test binary runs toolboxd's run in process, and commands start
// through its own executable (Config.ExecShim): it must be the shim too,
// as toolboxd's main is.
func TestMain(m *testing.M) {
	oomscore.Shim(os.Args)
	// As main does (TestTasksLimitBindsEveryCommand sets it).
	if err := limitTasks(os.Getenv(envTasksLimit)); err != nil {
		fmt.Fprintln(os.Stderr, "toolboxd test:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// syncBuffer collects the daemon's log while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func envFunc(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// start runs the daemon until the test ends and returns the address it
// logged and a function that stops it and returns run's error.
func start(t *testing.T, args []string, env map[string]string) (drydock.Endpoint, *syncBuffer, func() error) {
	t.Helper()
	// Several daemons run in this process at once: each gets its own
	// runtime directory, as each sandbox has its own /tmp.
	if _, ok := env[envRuntimeDir]; !ok {
		env = maps.Clone(env)
		if env == nil {
			env = map[string]string{}
		}
		env[envRuntimeDir] = t.TempDir()
	}
	ctx, cancel := context.WithCancel(t.Context())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, envFunc(env), logs) }()
	stop := func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(15 * time.Second):
			t.Fatal("toolboxd did not stop")
			return nil
		}
	}
	t.Cleanup(func() { cancel() })
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var line struct {
				Msg     string `json:"msg"`
				Address string `json:"address"`
				Network string `json:"network"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				return drydock.Endpoint{Network: line.Network, Address: line.Address}, logs, stop
			}
		}
		select {
		case err := <-done:
			t.Fatalf("toolboxd exited: %v\n%s", err, logs.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("toolboxd did not log its address:\n%s", logs.String())
	return drydock.Endpoint{}, nil, nil
}

func TestServesUnixSocketAndShutsDown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	sock := filepath.Join(dir, "run", "tb.sock")
	// A socket left by a daemon that died is replaced.
	os.Mkdir(filepath.Dir(sock), 0o755)
	stale, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	ep, logs, stop := start(t, []string{"-listen", "unix://" + sock, "-workspace", ws, "-profile", "desktop"},
		map[string]string{"TOOLBOXD_TOKEN": "s3cret-token"})
	if ep.Network != "unix" || ep.Address != sock {
		t.Errorf("endpoint %+v", ep)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o666 {
		t.Errorf("socket: %v %v", fi, err)
	}
	c := toolbox.New(ep, "s3cret-token")
	defer c.Close()
	ctx := t.Context()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil || info.Profile != drydock.ProfileDesktop || info.Workspace != ws || info.Version != version {
		t.Errorf("info %+v %v", info, err)
	}
	if _, err := c.CreateSession(ctx, toolbox.SessionRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(ctx, "s", toolbox.RunRequest{Command: "echo hi > f; cat f"})
	if err != nil || res.Output != "hi\n" {
		t.Errorf("run %+v %v", res, err)
	}
	if bad := toolbox.New(ep, "wrong"); bad.WriteFile(ctx, "x", nil) == nil {
		t.Error("a wrong token was accepted")
	}
	if err := stop(); err != nil {
		t.Fatalf("run returned %v", err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
	out := logs.String()
	if strings.Contains(out, "s3cret-token") {
		t.Error("the token appears in the logs")
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("log line is not JSON: %s", line)
		}
	}
}

func TestServesTCPWithTokenFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "token")
	os.WriteFile(tokFile, []byte("file-token\n"), 0o600)
	ep, _, stop := start(t, nil, map[string]string{
		"TOOLBOXD_LISTEN": "tcp://127.0.0.1:0", "TOOLBOXD_WORKSPACE": dir, "TOOLBOXD_TOKEN_FILE": tokFile,
		"TOOLBOXD_TOKEN": "ignored: the file wins"})
	if ep.Network != "tcp" {
		t.Errorf("endpoint %+v", ep)
	}
	c := toolbox.New(ep, "file-token")
	defer c.Close()
	if err := c.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestTokenAlias(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ep, _, stop := start(t, []string{"-listen", "127.0.0.1:0", "-workspace", dir}, map[string]string{"TOOLBOX_TOKEN": "alias"})
	c := toolbox.New(ep, "alias")
	defer c.Close()
	if err := c.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestRefusesBadConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notSocket := filepath.Join(dir, "file")
	os.WriteFile(notSocket, []byte("x"), 0o644)
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no token", []string{"-listen", "127.0.0.1:0"}, nil, "no token"},
		{"blank token", []string{"-listen", "127.0.0.1:0"}, map[string]string{"TOOLBOXD_TOKEN": "  \n"}, "no token"},
		{"missing token file", []string{"-token-file", filepath.Join(dir, "nope")}, nil, "token file"},
		{"bad profile", []string{"-profile", "gpu"}, map[string]string{"TOOLBOXD_TOKEN": "t"}, "profile"},
		{"path is not a socket", []string{"-listen", notSocket}, map[string]string{"TOOLBOXD_TOKEN": "t"}, "not a socket"},
		{"bad log level", []string{"-log-level", "loud"}, map[string]string{"TOOLBOXD_TOKEN": "t"}, "log-level"},
	} {
		var out syncBuffer
		err := run(t.Context(), c.args, envFunc(c.env), &out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error about %q", c.name, err, c.want)
		}
	}
	if data, _ := os.ReadFile(notSocket); string(data) != "x" {
		t.Error("a file in the way of the socket was touched")
	}
}

// TestStaticBuild builds the daemon as it ships into images and checks that
// the binary needs no dynamic loader.
func TestStaticBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary; skipped with -short")
	}
	t.Parallel()
	out := filepath.Join(t.TempDir(), "toolboxd")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=test", "-o", out, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("binary has an ELF interpreter: it is dynamically linked")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("binary needs shared libraries %v", libs)
	}
	v, err := exec.Command(out, "-version").CombinedOutput()
	if err != nil || !strings.Contains(string(v), "toolboxd test") {
		t.Errorf("-version: %s %v", v, err)
	}
}

// The reserve must leave the threads in the process: the runtime keeps idle
// threads, which is what lets toolboxd live through a fork bomb.
func TestReserveThreadsKeepsThem(t *testing.T) {
	before := threadCount()
	if before == 0 {
		t.Skip("no /proc/self/status here")
	}
	got := reserveThreads(12)
	if got < before+12 {
		t.Fatalf("%d threads after reserving %d more than the %d there were", got, 12, before)
	}
	time.Sleep(100 * time.Millisecond)
	if now := threadCount(); now < got {
		t.Fatalf("threads fell from %d to %d: the runtime gave them back", got, now)
	}
}

// Every command toolboxd starts runs with the highest OOM score from its
// first instruction (the shim), never with toolboxd's own: read at once by
// the command itself, every time.
func TestCommandsStartWithTheHighestOOMScore(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/oom_score_adj"); err != nil {
		t.Skip("no /proc/self/oom_score_adj here")
	}
	dir := t.TempDir()
	ep, _, stop := start(t, []string{"-listen", "unix://" + filepath.Join(dir, "tb.sock"), "-workspace", dir, "-services", "none"},
		map[string]string{"TOOLBOXD_TOKEN": "oom-token"})
	defer stop()
	c := toolbox.New(ep, "oom-token")
	defer c.Close()
	for i := range 30 {
		for _, req := range []toolbox.ExecRequest{
			{Args: []string{"cat", "/proc/self/oom_score_adj"}},
			{Command: "cat /proc/self/oom_score_adj"},
		} {
			var out bytes.Buffer
			if _, err := c.Exec(t.Context(), req, &out, &out); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(out.String()); got != "1000" {
				t.Fatalf("run %d (%+v): the command's OOM score is %q; want 1000", i, req, got)
			}
		}
	}
}
