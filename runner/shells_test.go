package runner_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
	"github.com/drydockhq/drydock/runner"
	"github.com/drydockhq/drydock/toolbox"
)

// An orchestrator stopped while the agent's shell ran a long command. The
// command ran on, and toolboxd's wait for the dead orchestrator's call held
// the shell: the resumed agent's next bash call waited 107 s with no word.
// The recovering runner now interrupts the command (or, when it ignores
// Ctrl-C, replaces the shell), the model reads what happened in its next
// prompt, and its next command runs at once.
func TestRecoveredJobGetsItsShellBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, command string
		notice        []string
		output        string
	}{
		{"interrupted", "mkdir -p sub && cd sub && touch ../ready && sleep 3600",
			[]string{"The orchestrator restarted while `mkdir -p sub && cd sub && touch ../ready && sleep 3600` was running in the shell",
				"it was interrupted (Ctrl-C)", "working directory, variables and background jobs are kept"},
			"hi from sub"},
		{"replaced", "mkdir -p sub && cd sub && trap '' INT && touch ../ready && sleep 3600",
			[]string{"The orchestrator restarted while `mkdir -p sub && cd sub && trap '' INT && touch ../ready && sleep 3600` was running",
				"did not stop when interrupted", "replaced by a fresh one", "were lost"},
			"hi from workspace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			srv := llmtest.NewServer(t, llmtest.Options{APIKey: llmtest.TestKey, Func: func(r *llmtest.Request) llmtest.Turn {
				switch r.N {
				case 1:
					// As long as the model asks for: the wait holds the
					// shell for the whole of it.
					in, _ := json.Marshal(map[string]any{"command": tc.command, "timeout": 3600})
					return llmtest.Turn{ToolCalls: []llm.ToolCall{{Name: "bash", Input: in}}}
				case 2:
					return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command":"echo hi from $(basename $PWD)"}`)}}
				}
				return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary":"said hi"}`)}}
			}})
			ag, err := agent.New(agent.Config{Provider: agent.ProviderOpenAI, Model: "gpt-4.1", APIKey: llmtest.TestKey, BaseURL: srv.OpenAIBaseURL()}, nil)
			if err != nil {
				t.Fatal(err)
			}
			b.deps.Agent = ag
			id := b.create(t, "Sleep, then say hi.")

			// The first server runs the job until the command runs, and
			// stops (its calls to toolboxd end, as when it is killed).
			first := runner.New(runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond}, b.deps)
			ctx, stop := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { first.Run(ctx) })
			sb := b.waitSandbox(t, id)
			b.waitRunning(t, sb, "agent")
			// Until the command has reached its sleep (past the trap), an
			// interrupt would stop it, and the test would not test that case.
			b.waitFile(t, sb, "ready")
			stop()
			wg.Wait()
			if j, _ := b.store.GetJob(t.Context(), id); j.Status != drydock.StatusRunning {
				t.Fatalf("job after the first server stopped: %s", j.Status)
			}

			// The next server recovers it.
			b.start(t, runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond})
			j := waitTerminalWithin(t, b.store, id, time.Minute)
			if j.Status != drydock.StatusComplete {
				t.Fatalf("recovered job: %s %q", j.Status, j.Error)
			}
			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d model requests; want 3", len(reqs))
			}
			resumed := reqs[1].LastUser()
			var text strings.Builder
			text.WriteString(resumed.Text)
			for _, r := range resumed.ToolResults {
				text.WriteString("\n" + r.Output)
			}
			for _, want := range append(tc.notice, "interrupted by a restart of the orchestrator") {
				if !strings.Contains(text.String(), want) {
					t.Errorf("the resumed prompt %q lacks %q", text.String(), want)
				}
			}
			if got := reqs[2].LastUser().ToolResults; len(got) != 1 || strings.TrimSpace(got[0].Output) != tc.output {
				t.Errorf("the next command's result %+v; want %q", got, tc.output)
			}
		})
	}
}

func (b *bundle) waitSandbox(t *testing.T, id string) *drydock.Sandbox {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if j, err := b.store.GetJob(t.Context(), id); err == nil && j.SandboxID != "" {
			sb, err := b.runtime.Get(t.Context(), j.SandboxID)
			if err != nil {
				t.Fatal(err)
			}
			return sb
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("job %s got no sandbox", id)
	return nil
}

// waitRunning waits until a command runs in the session.
func (b *bundle) waitRunning(t *testing.T, sb *drydock.Sandbox, session string) {
	t.Helper()
	tc := toolbox.New(sb.Endpoint, sb.Token)
	defer tc.Close()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		all, _ := tc.Sessions(t.Context())
		for _, s := range all {
			if s.ID == session && s.Running {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no command runs in session %s", session)
}

// waitFile waits until the sandbox's workspace holds a file at path.
func (b *bundle) waitFile(t *testing.T, sb *drydock.Sandbox, path string) {
	t.Helper()
	tc := toolbox.New(sb.Endpoint, sb.Token)
	defer tc.Close()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := tc.Stat(t.Context(), path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never appeared in the workspace", path)
}

func waitTerminalWithin(t *testing.T, st drydock.Store, id string, d time.Duration) *drydock.Job {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		j, err := st.GetJob(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.Terminal() {
			return j
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("job %s not done within %s", id, d)
	return nil
}
