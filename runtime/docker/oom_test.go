package docker

import (
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// oomLimits ask for a workspace four times the memory limit, as the
// server's defaults once asked for one as large as it.
var oomLimits = drydock.Resources{CPUs: 1, MemoryBytes: 256 << 20, PidsLimit: 256, WorkspaceBytes: 1 << 30, TmpBytes: 64 << 20}

// agentShell is the agent's session in a sandbox, with a helper that runs a
// command in it and fails the test on a transport error.
func agentShell(t *testing.T, sb *drydock.Sandbox) (*toolbox.Client, func(string) *toolbox.RunResult) {
	t.Helper()
	tc := toolbox.New(sb.Endpoint, sb.Token)
	t.Cleanup(tc.Close)
	if _, err := tc.CreateSession(t.Context(), toolbox.SessionRequest{ID: "agent"}); err != nil {
		t.Fatal(err)
	}
	return tc, func(cmd string) *toolbox.RunResult {
		t.Helper()
		res, err := tc.Run(t.Context(), "agent", toolbox.RunRequest{Command: cmd, Timeout: drydock.Duration(2 * time.Minute), IdleTimeout: drydock.Duration(2 * time.Minute)})
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return res
	}
}

// The red team filled a 2 GiB workspace under a 2 GiB memory limit: the
// workspace is a tmpfs charged to that limit, so the OOM killer took the
// agent's shell, twice, with no word why. Filling the workspace now ends in
// ENOSPC while the shell and its state live on, and rm frees it.
func TestFullWorkspaceIsENOSPCNotOOM(t *testing.T) {
	t.Parallel()
	forRealImage(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		sb := secureWith(t, s, rt, oomLimits)
		_, run := agentShell(t, sb)
		run("cd /workspace && export MARK=kept")
		res := run("head -c 1G /dev/zero > fill; echo status=$?; du -m fill")
		t.Logf("filling the workspace: %+v", res)
		if res.ShellExited || res.OutOfMemory != nil {
			t.Fatalf("filling the workspace ran out of memory: %+v", res)
		}
		if !strings.Contains(res.Output, "No space left on device") || !strings.Contains(res.Output, "status=1") {
			t.Errorf("filling the workspace: %q; want ENOSPC", res.Output)
		}
		if res := run(`echo "$MARK $PWD"; rm fill && echo removed`); res.Output != "kept /workspace\nremoved\n" {
			t.Errorf("after the fill: %+v", res)
		}
	})
}

// Memory that processes take is explained too: a memory bomb in the
// agent's shell, in the Python kernel and in node each gets a reply that
// names the OOM kill, the limit, and what files in memory hold.
func TestOutOfMemoryIsExplained(t *testing.T) {
	t.Parallel()
	forRealImage(t, func(t *testing.T, s setup) {
		rt := s.newRuntime(t)
		sb := secureWith(t, s, rt, oomLimits)
		tc, run := agentShell(t, sb)
		run("head -c 40M /dev/zero > /workspace/ballast")
		check := func(what string, o *toolbox.OutOfMemory) {
			t.Helper()
			if o == nil {
				t.Errorf("%s: no out-of-memory report", what)
				return
			}
			t.Logf("%s: %s", what, o.Message)
			for _, want := range []string{"out of memory", "limit is 256 MiB", "/workspace 40 MiB of"} {
				if !strings.Contains(o.Message, want) {
					t.Errorf("%s: %q lacks %q", what, o.Message, want)
				}
			}
		}

		res := run("python3 -c 'b = []\nwhile True: b.append(bytearray(8 << 20))'")
		if res.ExitCode != 137 {
			t.Errorf("bomb in the shell: %+v", res)
		}
		check("bomb in the shell", res.OutOfMemory)
		if res := run("echo alive"); res.Output != "alive\n" || res.OutOfMemory != nil {
			t.Errorf("after the bomb: %+v", res)
		}

		for _, c := range []toolbox.CodeRequest{
			{Language: toolbox.LangPython, Code: "b = []\nwhile True: b.append(bytearray(8 << 20))"},
			{Language: toolbox.LangJavaScript, Code: "const b = []; for (;;) b.push(Buffer.alloc(8 << 20, 1));"},
		} {
			c.Timeout = drydock.Duration(2 * time.Minute)
			cr, err := tc.RunCode(t.Context(), c)
			if err != nil {
				t.Fatalf("%s bomb: %v", c.Language, err)
			}
			if !cr.Error {
				t.Errorf("%s bomb ended without error: %+v", c.Language, cr)
			}
			check(c.Language+" bomb", cr.OutOfMemory)
		}
	})
}
