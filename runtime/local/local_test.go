package local

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/runtimetest"
	"github.com/drydockhq/drydock/toolbox"
)

func newRuntime(t *testing.T, opts Options) *Runtime {
	t.Helper()
	if opts.ServerID == "" {
		opts.ServerID = "test-server"
	}
	rt, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func TestConformance(t *testing.T) {
	root := t.TempDir()
	runtimetest.Run(t, func(t *testing.T) drydock.Runtime {
		return newRuntime(t, Options{Root: root})
	}, runtimetest.Options{ReadyTimeout: 10 * time.Second})
}

func client(t *testing.T, sb *drydock.Sandbox) *toolbox.Client {
	t.Helper()
	c := toolbox.New(sb.Endpoint, sb.Token)
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("toolbox of %s not ready: %v", sb.ID, err)
	}
	return c
}

func spec() drydock.SandboxSpec {
	return drydock.SandboxSpec{JobID: "job-1", Env: map[string]string{"JOB_VAR": "from-spec"}, Labels: map[string]string{"team": "a"}}
}

func TestSandboxLifecycle(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	rt := newRuntime(t, Options{Root: root})
	ctx := t.Context()
	sb, err := rt.Create(ctx, spec())
	if err != nil {
		t.Fatal(err)
	}
	if sb.Runtime != "local" || sb.Profile != drydock.ProfileHeadless || sb.Endpoint.Network != "unix" || len(sb.Token) < 32 {
		t.Errorf("sandbox %+v", sb)
	}
	for _, f := range []string{"token", "sandbox.json"} {
		fi, err := os.Stat(filepath.Join(root, sb.ID, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v; want mode 0600", f, fi, err)
		}
	}
	c := client(t, sb)
	if err := c.WriteFile(ctx, "src/main.go", []byte("package main\n")); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(rt.Workspace(sb.ID), "src", "main.go")); err != nil || string(data) != "package main\n" {
		t.Errorf("file on the host: %q %v", data, err)
	}
	if _, err := c.CreateSession(ctx, toolbox.SessionRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(ctx, "s", toolbox.RunRequest{Command: "pwd; echo $JOB_VAR; sleep 300 & echo $! > ../bg.pid"})
	if err != nil || res.Output != rt.Workspace(sb.ID)+"\nfrom-spec\n" {
		t.Errorf("run: %+v %v", res, err)
	}
	pidData, _ := os.ReadFile(filepath.Join(root, sb.ID, "bg.pid"))

	if err := rt.Destroy(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, sb.ID)); !os.IsNotExist(err) {
		t.Errorf("sandbox dir left behind: %v", err)
	}
	if _, err := os.Stat(sb.Endpoint.Address); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
	if err := c.Health(ctx); err == nil {
		t.Error("toolbox answers after Destroy")
	}
	if pid := strings.TrimSpace(string(pidData)); pid == "" {
		t.Error("no pid of the background job")
	} else if !gone(pid) {
		t.Errorf("background job %s survived Destroy", pid)
	}
	if err := rt.Destroy(ctx, sb.ID); err != nil {
		t.Errorf("second Destroy: %v", err)
	}
}

// gone waits briefly for a process to be dead; a zombie waiting for init
// to reap it counts as dead.
func gone(pid string) bool {
	deadline := time.Now().Add(3 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return true
		}
		if _, rest, ok := strings.Cut(string(stat), ") "); ok && strings.HasPrefix(rest, "Z") {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An orchestrator that restarts (or crashes) gets its sandboxes back with
// their files and tokens, served again by the new process.
func TestRestartRecovery(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ctx := t.Context()
	rt1 := newRuntime(t, Options{Root: root})
	sb, err := rt1.Create(ctx, spec())
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, sb)
	if err := c.WriteFile(ctx, "progress.txt", []byte("step 1 done\n")); err != nil {
		t.Fatal(err)
	}
	rt1.Close() // the process exits
	if err := c.Health(ctx); err == nil {
		t.Fatal("toolbox still answers after Close")
	}

	rt2 := newRuntime(t, Options{Root: root})
	list, err := rt2.List(ctx, map[string]string{drydock.LabelJob: "job-1"})
	if err != nil || len(list) != 1 || list[0].State != drydock.SandboxStopped || list[0].Token != sb.Token {
		t.Fatalf("List after restart: %+v %v; want the sandbox, stopped, with its token", list, err)
	}
	got, err := rt2.Get(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Token != sb.Token || got.Endpoint != sb.Endpoint || got.State != drydock.SandboxRunning {
		t.Errorf("Get after restart: %+v", got)
	}
	c2 := client(t, got)
	if data, err := c2.ReadFile(ctx, "progress.txt"); err != nil || string(data) != "step 1 done\n" {
		t.Errorf("file after restart: %q %v", data, err)
	}
	if _, err := c2.CreateSession(ctx, toolbox.SessionRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if res, err := c2.Run(ctx, "s", toolbox.RunRequest{Command: "echo step 2 done >> progress.txt; cat progress.txt"}); err != nil || res.Output != "step 1 done\nstep 2 done\n" {
		t.Errorf("run after restart: %+v %v", res, err)
	}

	// A crash leaves the socket file behind; the next process replaces it.
	rt2.mu.Lock()
	inst := rt2.served[sb.ID]
	delete(rt2.served, sb.ID)
	rt2.mu.Unlock()
	inst.hs.Close()
	inst.srv.Close()
	stale, err := net.Listen("unix", sb.Endpoint.Address+".x")
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	os.Remove(sb.Endpoint.Address)
	if err := os.Rename(sb.Endpoint.Address+".x", sb.Endpoint.Address); err != nil {
		t.Fatal(err)
	}
	rt3 := newRuntime(t, Options{Root: root})
	got, err = rt3.Get(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := client(t, got).ReadFile(ctx, "progress.txt"); err != nil || !strings.Contains(string(data), "step 2") {
		t.Errorf("after a crash: %q %v", data, err)
	}
	if err := rt3.Destroy(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
}

func TestDeepRootUsesShortSocketDir(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), strings.Repeat("deep-directory-name/", 8))
	rt := newRuntime(t, Options{Root: root})
	sb, err := rt.Create(t.Context(), spec())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Destroy(context.WithoutCancel(t.Context()), sb.ID)
	if len(sb.Endpoint.Address) > maxSocketPath || !strings.HasPrefix(sb.Endpoint.Address, os.TempDir()) {
		t.Errorf("socket %q (%d bytes) for a deep root", sb.Endpoint.Address, len(sb.Endpoint.Address))
	}
	if err := client(t, sb).WriteFile(t.Context(), "x", []byte("x")); err != nil {
		t.Fatal(err)
	}
	// A new runtime over the same root finds the same socket.
	rt2 := newRuntime(t, Options{Root: root})
	if got, err := rt2.Get(t.Context(), sb.ID); err != nil || got.Endpoint != sb.Endpoint {
		t.Errorf("second runtime: %+v %v", got, err)
	}
	if err := rt.Destroy(t.Context(), sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sb.Endpoint.Address); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
}

func TestFailedCreateLeavesNothing(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, nil, 0o644)
	rt := newRuntime(t, Options{Root: root, SocketDir: notDir})
	if _, err := rt.Create(t.Context(), spec()); err == nil {
		t.Fatal("Create with an unusable socket dir succeeded")
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("failed Create left %d entries in the root", len(ents))
	}
}

func TestDestroyReadOnlyWorkspace(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	rt := newRuntime(t, Options{Root: root})
	sb, err := rt.Create(t.Context(), spec())
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, sb)
	if err := c.Mkdir(t.Context(), "locked/in"); err != nil {
		t.Fatal(err)
	}
	c.WriteFile(t.Context(), "locked/in/f", []byte("x"))
	var out strings.Builder
	if _, err := c.Exec(t.Context(), toolbox.ExecRequest{Command: "chmod 0555 locked/in locked"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if err := rt.Destroy(t.Context(), sb.ID); err != nil {
		t.Fatalf("Destroy of a read-only tree: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, sb.ID)); !os.IsNotExist(err) {
		t.Errorf("sandbox dir left behind: %v", err)
	}
}
