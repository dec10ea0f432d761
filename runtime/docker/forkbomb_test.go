package docker

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/runtimetest"
	"github.com/drydockhq/drydock/toolbox"
)

// TestForkBombThroughToolboxd runs a fork bomb the way an agent would, as a
// command toolboxd starts, and keeps the pids limit exhausted for seconds
// while 16 clients call toolboxd without pause (files, listings, new
// commands). toolboxd must answer every call (a command it cannot start is
// an error reply, not a crash), the container must not exit, and once the
// bomb's processes end everything works again.
func TestForkBombThroughToolboxd(t *testing.T) {
	t.Parallel()
	forRealImage(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		sb := secure(t, s, rt)
		tc := toolbox.New(sb.Endpoint, sb.Token)
		defer tc.Close()
		ctx := t.Context()

		// The bomb: children that hold their pids for 30 s, forked until
		// 400 have run, a refused fork retried at once, so every pid that
		// frees up is taken again, as in a real fork bomb; toolboxd ends
		// the command's whole group at its 40 s timeout. (A bash loop gave
		// up after its own fork retries, exit 254, on a loaded machine
		// sometimes before the test saw the limit held.)
		bomb := make(chan error, 1)
		var bombOut lockedBuffer
		bombStart := time.Now()
		go func() {
			r, err := tc.Exec(ctx, toolbox.ExecRequest{
				Args:    []string{"python3", "-c", forkBomb},
				Timeout: drydock.Duration(40 * time.Second),
			}, &bombOut, &bombOut)
			if err == nil && r.ExitCode != 0 && !r.TimedOut {
				err = fmt.Errorf("the bomb exited %d after %s", r.ExitCode, time.Since(bombStart).Round(time.Millisecond))
			}
			bomb <- err
		}()

		// Wait until the bomb holds the limit: a new process is refused.
		saturated := time.Now().Add(25 * time.Second)
		for {
			_, err := tc.Exec(ctx, toolbox.ExecRequest{Args: []string{"true"}}, io.Discard, io.Discard)
			if drydock.ErrorCode(err) == drydock.EUNAVAILABLE {
				t.Logf("the bomb holds the pids limit: %v", err)
				break
			}
			if time.Now().After(saturated) {
				select {
				case berr := <-bomb:
					t.Fatalf("the bomb ended early (%v) without exhausting the pids limit: %q", berr, bombOut.String())
				default:
				}
				t.Fatalf("the bomb did not exhaust the pids limit within 25 s (last start: %v); its output so far: %q", err, bombOut.String())
			}
			time.Sleep(50 * time.Millisecond)
		}

		var calls, refused atomic.Int64
		var mu sync.Mutex
		var failures []string
		fail := func(format string, a ...any) {
			mu.Lock()
			defer mu.Unlock()
			if len(failures) < 10 {
				failures = append(failures, fmt.Sprintf(format, a...))
			}
		}
		stop := time.Now().Add(5 * time.Second)
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Go(func() {
				name := fmt.Sprintf("w%d.txt", w)
				for i := 0; time.Now().Before(stop); i++ {
					cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					var err error
					switch i % 4 {
					case 0:
						err = tc.WriteFile(cctx, name, []byte("still here"))
					case 1:
						_, err = tc.ReadFile(cctx, name)
						if drydock.ErrorCode(err) == drydock.ENOTFOUND {
							err = nil
						}
					case 2:
						_, err = tc.List(cctx, ".")
					case 3:
						// Starting a process may be refused while the
						// bomb holds every pid; the reply must say so.
						var r *toolbox.ExecResult
						r, err = tc.Exec(cctx, toolbox.ExecRequest{Args: []string{"true"}}, io.Discard, io.Discard)
						if drydock.ErrorCode(err) == drydock.EUNAVAILABLE {
							refused.Add(1)
							err = nil
						} else if err == nil && r.ExitCode != 0 {
							refused.Add(1)
						}
					}
					cancel()
					calls.Add(1)
					if err != nil {
						fail("call %d of worker %d: %v", i, w, err)
					}
				}
			})
		}
		wg.Wait()
		t.Logf("%d calls to toolboxd during the bomb; %d process starts refused", calls.Load(), refused.Load())
		if refused.Load() == 0 {
			t.Error("no process start was refused during the bomb: the test did not exhaust the pids limit")
		}
		for _, f := range failures {
			t.Error(f)
		}

		inspect, err := rt.Client().ContainerInspect(ctx, sb.ID, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatalf("inspect after the bomb: %v", err)
		}
		if st := inspect.Container.State; st == nil || !st.Running {
			logs, _ := rt.Client().ContainerLogs(context.WithoutCancel(ctx), sb.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: "40"})
			var tail []byte
			if logs != nil {
				tail, _ = io.ReadAll(logs)
				logs.Close()
			}
			t.Fatalf("the sandbox stopped during the bomb: %+v\nlast log lines:\n%s", st, tail)
		}
		select {
		case err := <-bomb:
			if err != nil {
				t.Logf("bomb command: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("the bomb command did not end")
		}
		if err := runtimetest.Probe(ctx, sb); err != nil {
			t.Fatalf("toolboxd does not answer after the bomb: %v", err)
		}
		r, err := tc.Exec(ctx, toolbox.ExecRequest{Args: []string{"sh", "-c", "echo ok"}}, io.Discard, io.Discard)
		if err != nil || r.ExitCode != 0 {
			t.Fatalf("a command after the bomb: %+v %v", r, err)
		}
	})
}

// forkBomb forks children that sleep 30 s (as sleep, not copies of Python
// filling the memory limit first) until 400 have started, taking every pid
// the limit allows and retrying each refused fork, then waits.
const forkBomb = `import os, time
started = 0
while started < 400:
    try:
        if os.fork() == 0:
            os.execv("/bin/sleep", ["sleep", "30"])
        started += 1
    except OSError:
        time.sleep(0.01)
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
`

// forRealImage runs f on each engine with the real image carrying this
// tree's toolboxd: its shell and tools are what an agent's commands use.
func forRealImage(t *testing.T, f func(t *testing.T, s setup)) {
	forKinds(t, func(t *testing.T, s setup) {
		s.image = runtimetest.CurrentImage(t, s.host)
		f(t, s)
	})
}

type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// TestMemoryBombThroughToolboxd fills the workspace (tmpfs pages count
// against the memory limit) and then runs a program that allocates far past
// the sandbox's 128 MiB, both as commands toolboxd starts. The OOM killer
// must take the agent's process, never toolboxd: the processes toolboxd
// starts carry the highest OOM score.
func TestMemoryBombThroughToolboxd(t *testing.T) {
	t.Parallel()
	forRealImage(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		sb := secure(t, s, rt)
		tc := toolbox.New(sb.Endpoint, sb.Token)
		defer tc.Close()
		ctx := t.Context()
		run := func(script string) (*toolbox.ExecResult, string) {
			var out lockedBuffer
			r, err := tc.Exec(ctx, toolbox.ExecRequest{Args: []string{"bash", "-c", script}, Timeout: drydock.Duration(60 * time.Second)}, &out, &out)
			if err != nil {
				t.Fatalf("%s: %v (output %q)", script, err, out.String())
			}
			return r, out.String()
		}

		if _, out := run("cat /proc/self/oom_score_adj"); out != "1000\n" {
			t.Errorf("a command's OOM score is %q; want 1000", out)
		}
		run("head -c 15M /dev/zero > /workspace/fill || true")
		for i := range 3 {
			start := time.Now()
			r, out := run(`python3 -c 'b = []
while True: b.append(bytearray(8 << 20))'`)
			if r.ExitCode == 0 {
				t.Fatalf("bomb %d: a growing allocation ended without error under a 128 MiB limit: %q", i, out)
			}
			t.Logf("bomb %d: exit %d after %s", i, r.ExitCode, time.Since(start).Round(time.Millisecond))
			if err := runtimetest.Probe(ctx, sb); err != nil {
				t.Fatalf("toolboxd does not answer after memory bomb %d: %v", i, err)
			}
		}
		inspect, err := rt.Client().ContainerInspect(ctx, sb.ID, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st := inspect.Container.State; st == nil || !st.Running {
			t.Fatalf("the sandbox stopped: %+v", st)
		}
		if _, out := run("rm /workspace/fill && echo ok"); out != "ok\n" {
			t.Fatalf("a command after the bombs: %q", out)
		}
	})
}

// TestSecretsStayOutOfTheSandbox looks for the sandbox's own toolboxd token
// and VNC password from inside it, as an agent's command could: in PID 1's
// environment, in every readable /proc/*/environ and cmdline, in the socket
// directory, and in `docker inspect`. None may hold them, and toolboxd's
// memory must not be readable to the sandbox's other processes.
func TestSecretsStayOutOfTheSandbox(t *testing.T) {
	t.Parallel()
	forRealImage(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		sb := secure(t, s, rt)
		tc := toolbox.New(sb.Endpoint, sb.Token)
		defer tc.Close()
		var out lockedBuffer
		_, err := tc.Exec(t.Context(), toolbox.ExecRequest{Args: []string{"bash", "-c", `
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do cat "$f" 2>/dev/null | tr '\0' '\n'; done
ls -a /run/toolbox | sed 's/^/L''S:/'; cat /run/toolbox/*.json 2>/dev/null
for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = toolboxd ] && pid=${p#/proc/}; done
echo "TOOLBOXD=$pid"
cat /proc/$pid/environ >/dev/null 2>&1 && echo "LE""AK: toolboxd environ readable"
head -c1 /proc/$pid/mem >/dev/null 2>&1 && echo "LE""AK: toolboxd mem readable"
true`}}, &out, &out)
		if err != nil {
			t.Fatal(err)
		}
		got := out.String()
		for name, secret := range map[string]string{"token": sb.Token, "VNC password": sb.VNCPassword} {
			if secret != "" && strings.Contains(got, secret) {
				t.Errorf("the sandbox's %s is visible inside it", name)
			}
		}
		if strings.Contains(got, "LS:"+"boot-secrets") {
			t.Error("the boot secrets file is still in /run/toolbox")
		}
		if !regexp.MustCompile(`(?m)^TOOLBOXD=[0-9]+$`).MatchString(got) {
			t.Errorf("toolboxd's process not found from inside the sandbox: %q", got)
		}
		if i := strings.Index(got, "LEAK:"); i >= 0 {
			t.Errorf("from inside the sandbox, %s", got[i:])
		}
		inspect, err := rt.Client().ContainerInspect(t.Context(), sb.ID, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range inspect.Container.Config.Env {
			if strings.Contains(e, sb.Token) || (sb.VNCPassword != "" && strings.Contains(e, sb.VNCPassword)) {
				t.Errorf("docker inspect shows a secret in %s", strings.SplitN(e, "=", 2)[0])
			}
		}
	})
}
