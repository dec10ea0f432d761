package server

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

func dur(d time.Duration) drydock.Duration { return drydock.Duration(d) }

func TestSessionPersistsState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.session("s")
	os.Mkdir(filepath.Join(b.ws, "sub"), 0o755)

	steps := []struct {
		cmd  string
		out  string
		code int
	}{
		{"cd sub && export FOO=bar", "", 0},
		{"pwd; echo $FOO", filepath.Join(b.ws, "sub") + "\nbar\n", 0},
		{"f() { echo fn; }", "", 0},
		{"f", "fn\n", 0},
		{"false", "", 1},
		{"(exit 3)", "", 3},
		{"printf abc", "abc", 0},
		{"echo out; echo err >&2", "out\nerr\n", 0},
		{"cat", "", 0}, // stdin is empty, so nothing waits for input
		{"echo \"unclosed", "", 2},
		{"echo still here", "still here\n", 0},
		{"sleep 300 &\necho started", "started\n", 0},
		{"jobs | grep -c 'sleep 300'", "1\n", 0},
		{"cat <<'EOF'\n$HOME is literal\nEOF", "$HOME is literal\n", 0},
	}
	for _, st := range steps {
		res := b.run("s", toolbox.RunRequest{Command: st.cmd})
		out := res.Output
		if st.cmd == "echo \"unclosed" {
			out = "" // bash's syntax error message is not ours to pin down
		}
		if out != st.out || res.ExitCode != st.code || res.Running || res.ShellExited {
			t.Errorf("%q: output %q exit %d running %v exited %v; want %q exit %d",
				st.cmd, res.Output, res.ExitCode, res.Running, res.ShellExited, st.out, st.code)
		}
	}
}

func TestSessionSoftTimeoutAndWait(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.session("s")
	res := b.run("s", toolbox.RunRequest{Command: "echo first; sleep 1; echo second", IdleTimeout: dur(300 * time.Millisecond)})
	if !res.Running || res.Output != "first\n" || res.ExitCode != -1 {
		t.Fatalf("soft timeout: %+v; want running with the first line", res)
	}
	if r := b.do("POST", "/v1/sessions/s/run", toolbox.RunRequest{Command: "echo other"}); r.status != http.StatusConflict {
		t.Errorf("new command while one runs: %d %s; want 409", r.status, r.body)
	}
	res = b.run("s", toolbox.RunRequest{IdleTimeout: dur(5 * time.Second)})
	if res.Running || res.Output != "second\n" || res.ExitCode != 0 {
		t.Errorf("wait: %+v; want the rest and exit 0", res)
	}
	if r := b.do("POST", "/v1/sessions/s/run", toolbox.RunRequest{}); r.status != http.StatusBadRequest {
		t.Errorf("wait with nothing running: %d %s; want 400", r.status, r.body)
	}
	// A command that ends after its soft timeout, never waited for, hands
	// its last output to the next command's reply.
	res = b.run("s", toolbox.RunRequest{Command: "sleep 0.4; echo late", IdleTimeout: dur(100 * time.Millisecond)})
	if !res.Running {
		t.Fatalf("want running: %+v", res)
	}
	time.Sleep(700 * time.Millisecond)
	res = b.run("s", toolbox.RunRequest{Command: "echo next"})
	if res.Output != "late\nnext\n" {
		t.Errorf("output after an uncollected command: %q", res.Output)
	}
}

func TestSessionHardTimeoutInterrupts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.session("s")
	b.run("s", toolbox.RunRequest{Command: "export KEEP=1; sleep 300 &"})
	start := time.Now()
	res := b.run("s", toolbox.RunRequest{Command: "echo before; sleep 30; echo after", Timeout: dur(400 * time.Millisecond)})
	if !res.TimedOut || res.ExitCode != 130 || res.ShellExited || res.Running || res.Output != "before\n" {
		t.Errorf("hard timeout: %+v; want timed out, exit 130, shell alive, no 'after'", res)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("hard timeout took %v", el)
	}
	res = b.run("s", toolbox.RunRequest{Command: "echo $KEEP; jobs | grep -c 'sleep 300'"})
	if res.Output != "1\n1\n" {
		t.Errorf("after Ctrl-C the shell lost its state or its background job: %q", res.Output)
	}
	// A busy loop of builtins is interrupted too.
	res = b.run("s", toolbox.RunRequest{Command: "while true; do :; done", Timeout: dur(300 * time.Millisecond)})
	if !res.TimedOut || res.ExitCode != 130 || res.ShellExited {
		t.Errorf("builtin loop: %+v", res)
	}
}

func TestSessionKilledWhenCtrlCIgnored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.session("s")
	b.run("s", toolbox.RunRequest{Command: "cd /tmp && export GONE=1"})
	res := b.run("s", toolbox.RunRequest{Command: "trap '' INT; sleep 30", Timeout: dur(200 * time.Millisecond)})
	if !res.TimedOut || !res.ShellExited || res.ExitCode != -1 {
		t.Errorf("command ignoring Ctrl-C: %+v; want timed out and shell killed", res)
	}
	res = b.run("s", toolbox.RunRequest{Command: "pwd; echo \"[$GONE]\""})
	if res.Output != b.ws+"\n[]\n" || res.ShellExited {
		t.Errorf("next command: %+v; want a fresh shell in the workspace", res)
	}
}

func TestSessionInterrupt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.session("s")
	if r := b.do("POST", "/v1/sessions/s/interrupt", nil); r.status != http.StatusConflict {
		t.Errorf("interrupt with nothing running: %d %s", r.status, r.body)
	}
	res := b.run("s", toolbox.RunRequest{Command: "echo go; sleep 30", IdleTimeout: dur(200 * time.Millisecond)})
	if !res.Running {
		t.Fatalf("want running: %+v", res)
	}
	var ir toolbox.RunResult
	b.ok(200, &ir, "POST", "/v1/sessions/s/interrupt", nil)
	if !ir.Interrupted || ir.Running || ir.ExitCode != 130 {
		t.Errorf("interrupt: %+v", ir)
	}
	res = b.run("s", toolbox.RunRequest{Command: "echo ok"})
	if res.Output != "ok\n" || res.ExitCode != 0 {
		t.Errorf("after interrupt: %+v", res)
	}
	// An interrupt while another caller waits: the waiter sees the end.
	done := make(chan toolbox.RunResult)
	go func() {
		var r toolbox.RunResult
		b.ok(200, &r, "POST", "/v1/sessions/s/run", toolbox.RunRequest{Command: "python3 -c 'import time; time.sleep(30)' 2>/dev/null || sleep 30"})
		done <- r
	}()
	time.Sleep(300 * time.Millisecond)
	b.ok(200, &ir, "POST", "/v1/sessions/s/interrupt", nil)
	select {
	case r := <-done:
		if !r.Interrupted || r.Running {
			t.Errorf("waiter after interrupt: %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter did not return after interrupt")
	}
}

func TestSessionExitAndRestart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.session("s")
	b.run("s", toolbox.RunRequest{Command: "export X=1"})
	res := b.run("s", toolbox.RunRequest{Command: "echo bye; exit 7"})
	if !res.ShellExited || res.ExitCode != 7 || res.Output != "bye\n" {
		t.Errorf("exit: %+v", res)
	}
	res = b.run("s", toolbox.RunRequest{Command: "echo \"[$X]\""})
	if res.Output != "[]\n" {
		t.Errorf("after exit: %q", res.Output)
	}
	b.run("s", toolbox.RunRequest{Command: "export Y=2"})
	var info toolbox.Session
	b.ok(200, &info, "POST", "/v1/sessions/s/restart", nil)
	if info.ID != "s" || info.Pid == 0 {
		t.Errorf("restart: %+v", info)
	}
	if res := b.run("s", toolbox.RunRequest{Command: "echo \"[$Y]\""}); res.Output != "[]\n" {
		t.Errorf("after restart: %q", res.Output)
	}
}

func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.MaxSessions = 2; c.Env = map[string]string{"FROM_CONFIG": "cfg"} })
	os.Mkdir(filepath.Join(b.ws, "start"), 0o755)
	var s1 toolbox.Session
	b.ok(201, &s1, "POST", "/v1/sessions", toolbox.SessionRequest{Cwd: "start", Env: map[string]string{"FROM_REQ": "req"}})
	if !strings.HasPrefix(s1.ID, "s-") {
		t.Errorf("generated id %q", s1.ID)
	}
	res := b.run(s1.ID, toolbox.RunRequest{Command: "pwd; echo $FROM_CONFIG $FROM_REQ"})
	if want := filepath.Join(b.ws, "start") + "\ncfg req\n"; res.Output != want {
		t.Errorf("session start state %q, want %q", res.Output, want)
	}
	b.session("two")
	if r := b.do("POST", "/v1/sessions", toolbox.SessionRequest{ID: "two"}); r.status != 409 {
		t.Errorf("duplicate id: %d", r.status)
	}
	if r := b.do("POST", "/v1/sessions", toolbox.SessionRequest{ID: "three"}); r.status != 409 {
		t.Errorf("over the session limit: %d", r.status)
	}
	if r := b.do("POST", "/v1/sessions", toolbox.SessionRequest{ID: "bad id!"}); r.status != 400 {
		t.Errorf("bad id: %d", r.status)
	}
	var list []toolbox.Session
	b.ok(200, &list, "GET", "/v1/sessions", nil)
	if len(list) != 2 {
		t.Errorf("list: %+v", list)
	}
	// Deleting a session kills its background jobs.
	res = b.run("two", toolbox.RunRequest{Command: "sleep 300 & echo $!"})
	pid, err := strconv.Atoi(strings.TrimSpace(res.Output))
	if err != nil {
		t.Fatalf("pid %q: %v", res.Output, err)
	}
	b.ok(204, nil, "DELETE", "/v1/sessions/two", nil)
	deadline := time.Now().Add(3 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("background job %d survived its session", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := b.do("POST", "/v1/sessions/two/run", toolbox.RunRequest{Command: "true"}); r.status != 404 {
		t.Errorf("run in deleted session: %d", r.status)
	}
	if r := b.do("DELETE", "/v1/sessions/two", nil); r.status != 404 {
		t.Errorf("delete twice: %d", r.status)
	}
}

func TestSessionOutputCap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.session("s")
	res := b.run("s", toolbox.RunRequest{Command: "seq 1 100000", MaxOutput: 1000})
	var whole strings.Builder
	for i := 1; i <= 100000; i++ {
		whole.WriteString(strconv.Itoa(i) + "\n")
	}
	if !res.Truncated || res.OutputBytes != int64(whole.Len()) || res.OutputPath == "" {
		t.Fatalf("capped run: truncated %v bytes %d path %q", res.Truncated, res.OutputBytes, res.OutputPath)
	}
	if !strings.HasPrefix(res.Output, "1\n2\n3\n") || !strings.HasSuffix(res.Output, "99999\n100000\n") ||
		!strings.Contains(res.Output, res.OutputPath) || len(res.Output) > 1200 {
		t.Errorf("capped output (%d bytes) lacks head, tail or the path:\n%s", len(res.Output), res.Output)
	}
	if !strings.HasPrefix(res.OutputPath, filepath.Join(b.ws, OutputDir)+"/") {
		t.Errorf("output path %q is not under the workspace's %s", res.OutputPath, OutputDir)
	}
	data, err := os.ReadFile(res.OutputPath)
	if err != nil || string(data) != whole.String() {
		t.Errorf("saved output: %d bytes, err %v; want the whole %d bytes", len(data), err, whole.Len())
	}
	res = b.run("s", toolbox.RunRequest{Command: "seq 1 10", MaxOutput: 1000})
	if res.Truncated || res.OutputPath != "" || res.Output != "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n" {
		t.Errorf("small output: %+v", res)
	}
	if r := b.do("POST", "/v1/sessions/s/run", toolbox.RunRequest{Command: "true", MaxOutput: 1}); r.status != 400 {
		t.Errorf("max_output 1: %d", r.status)
	}
}

func TestSessionBackgroundOutput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.session("s")
	b.run("s", toolbox.RunRequest{Command: "(sleep 0.2; echo late) &"})
	time.Sleep(600 * time.Millisecond)
	if res := b.run("s", toolbox.RunRequest{Command: "echo now"}); res.Output != "late\nnow\n" {
		t.Errorf("output of a background job between commands: %q", res.Output)
	}
}

// The daemon's configuration and secrets stay out of the sandbox's
// processes. Not parallel: it sets the process environment.
func TestChildrenDoNotSeeDaemonSecrets(t *testing.T) {
	t.Setenv("TOOLBOXD_VNC_PASSWORD", "vnc-secret")
	t.Setenv("TOOLBOX_TOKEN", "token-secret")
	t.Setenv("DRYDOCK_PASSED", "through")
	b := setup(t)
	b.session("s")
	res := b.run("s", toolbox.RunRequest{Command: "env | grep -c secret; echo $DRYDOCK_PASSED"})
	if res.Output != "0\nthrough\n" {
		t.Errorf("session env: %q", res.Output)
	}
	r := b.ok(200, nil, "POST", "/v1/exec", toolbox.ExecRequest{Command: "env | grep -c secret"})
	if out, _, _ := collect(execFrames(t, r.body)); out != "0\n" {
		t.Errorf("exec env: %q", out)
	}
}

func TestSessionSurvivesLossOfScratchDir(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.session("s")
	res := b.run("s", toolbox.RunRequest{Command: "rm -rf " + b.srv.stateDir + "; echo cleaned"})
	if res.Output != "cleaned\n" {
		t.Fatalf("cleanup run: %+v", res)
	}
	if res := b.run("s", toolbox.RunRequest{Command: "echo still works"}); res.Output != "still works\n" {
		t.Errorf("after the scratch dir was removed: %+v", res)
	}
}
