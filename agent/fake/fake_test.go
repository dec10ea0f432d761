package fake_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/fake"
	"github.com/drydockhq/drydock/agent/transcript"
	localrt "github.com/drydockhq/drydock/runtime/local"
	"github.com/drydockhq/drydock/toolbox"
)

// log collects what an agent emits, as the runner would store it.
type log struct {
	mu     sync.Mutex
	events []*drydock.Event
	steps  int
	usage  drydock.Usage // the last usage reported with progress
}

func (l *log) Emit(_ context.Context, typ drydock.EventType, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, &drydock.Event{Seq: int64(len(l.events) + 1), Type: typ, Data: b})
	return nil
}

func (l *log) of(typ drydock.EventType) []*drydock.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*drydock.Event
	for _, e := range l.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func (l *log) calls(t *testing.T) []transcript.ToolCall {
	var out []transcript.ToolCall
	for _, e := range l.of(drydock.EventToolCall) {
		var c transcript.ToolCall
		if err := json.Unmarshal(e.Data, &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func (l *log) observations(t *testing.T) []transcript.Observation {
	var out []transcript.Observation
	for _, e := range l.of(drydock.EventObservation) {
		var o transcript.Observation
		if err := json.Unmarshal(e.Data, &o); err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

type bundle struct {
	rt    *localrt.Runtime
	sb    *drydock.Sandbox
	agent *fake.Agent
}

// setup starts a sandbox of the local runtime (toolboxd in-process over a
// temporary directory, commands on this machine) for the agent to work in.
func setup(t *testing.T) *bundle {
	t.Helper()
	for _, bin := range []string{"bash", "python3", "node"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed; the demo runs it in the sandbox (the local runtime's sandbox is this machine)", bin)
		}
	}
	rt, err := localrt.New(localrt.Options{Root: filepath.Join(t.TempDir(), "sandboxes"), ServerID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	sb, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "job-1"})
	if err != nil {
		t.Fatal(err)
	}
	c := toolbox.New(sb.Endpoint, sb.Token)
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return &bundle{rt: rt, sb: sb, agent: &fake.Agent{Dial: func(*drydock.Sandbox) fake.Workspace { return c }}}
}

func (b *bundle) run(t *testing.T, ctx context.Context, task string, history ...*drydock.Event) (*log, *drydock.AgentOutcome, error) {
	t.Helper()
	l := &log{}
	out, err := b.agent.Run(ctx, &drydock.AgentRun{
		Job:     &drydock.Job{ID: "job-1", JobSpec: drydock.JobSpec{Task: task}},
		Sandbox: b.sb,
		Events:  l,
		History: history,
		Progress: func(_ context.Context, steps int, _ drydock.Usage) error {
			l.mu.Lock()
			l.steps = steps
			l.mu.Unlock()
			return nil
		},
	})
	return l, out, err
}

func (b *bundle) file(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.rt.Workspace(b.sb.ID), rel))
	if err != nil {
		t.Fatalf("the demo did not write %s: %v", rel, err)
	}
	return string(data)
}

// fast keeps the tests quick: the demo pauses between steps for people
// watching.
const fast = " [fake:delay=0s]"

// The demo reads the task, builds a small project that matches it with the
// LLM agent's tools, runs real commands and the project's tests in the
// sandbox, and finishes with a summary saying what happened.
func TestDemoBuildsWhatTheTaskAsksFor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		task, dir string
		files     []string
		// in: a file and what it must contain.
		in         map[string]string
		testOutput string
	}{{
		task:       "Build me a todo app in React",
		dir:        "todo-app-react",
		files:      []string{"README.md", "package.json", "index.html", "vite.config.js", "src/main.jsx", "src/App.jsx", "src/todos.js", "src/todos.test.js"},
		in:         map[string]string{"package.json": `"react-dom"`, "src/App.jsx": "addTodo(todos, title)", "README.md": "npm run dev"},
		testOutput: "# pass 4",
	}, {
		task:       "Write a Python GUI todo app",
		dir:        "python-gui-todo",
		files:      []string{"README.md", "todo.py", "app.py", "test_todo.py"},
		in:         map[string]string{"app.py": "import tkinter", "todo.py": "class TodoList"},
		testOutput: "OK",
	}, {
		task:       "Create a REST API in Node.js that keeps a shopping list",
		dir:        "rest-api-node",
		files:      []string{"README.md", "package.json", "server.js", "src/items.js", "src/items.test.js"},
		in:         map[string]string{"server.js": "createServer", "package.json": `"test": "node --test src/items.test.js"`},
		testOutput: "# pass 4",
	}, {
		task:       "Summarise the harbour's tide tables",
		dir:        "summarise-harbour-s",
		files:      []string{"README.md", "item.py", "test_item.py"},
		in:         map[string]string{"item.py": "class ItemList"},
		testOutput: "OK",
	}}
	for _, tc := range cases {
		t.Run(tc.dir, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			l, out, err := b.run(t, t.Context(), tc.task+fast)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range tc.files {
				b.file(t, filepath.Join(tc.dir, f))
			}
			for f, want := range tc.in {
				if got := b.file(t, filepath.Join(tc.dir, f)); !strings.Contains(got, want) {
					t.Errorf("%s lacks %q:\n%s", f, want, got)
				}
			}
			if readme := b.file(t, filepath.Join(tc.dir, "README.md")); !strings.Contains(readme, "> "+tc.task+"\n") {
				t.Errorf("README.md does not quote the task (without directives):\n%s", readme)
			}

			calls, obs := l.calls(t), l.observations(t)
			if len(calls) != len(obs) || len(obs) != l.steps {
				t.Fatalf("%d calls, %d observations, %d steps reported: want one of each per step", len(calls), len(obs), l.steps)
			}
			var commands []string
			for _, c := range calls {
				var in struct{ Command string }
				json.Unmarshal(c.Input, &in)
				if c.Name == "bash" {
					commands = append(commands, in.Command)
				}
			}
			if len(commands) < 3 || !strings.Contains(commands[0], "node --version") || !strings.Contains(commands[0], "python3 --version") {
				t.Errorf("the demo does not look at the sandbox's tools first: %q", commands)
			}
			if !strings.Contains(obs[0].Output, "Python 3.") || !strings.Contains(obs[0].Output, "v") {
				t.Errorf("the first command's output does not show the tools' versions: %s", obs[0].Output)
			}
			var tests *transcript.Observation
			for i, c := range calls {
				in := string(c.Input)
				if c.Name == "bash" && !strings.Contains(in, "xterm") && (strings.Contains(in, "node --test") || strings.Contains(in, "unittest")) {
					tests = &obs[i]
				}
				if obs[i].IsError {
					t.Errorf("step %d (%s %s) failed: %s", i+1, c.Name, c.Input, obs[i].Output)
				}
			}
			if tests == nil || !strings.Contains(tests.Output, tc.testOutput) {
				t.Errorf("the project's tests did not run and pass in the sandbox: %+v", tests)
			}
			last := calls[len(calls)-1]
			if last.Name != "finish" || out == nil || !strings.Contains(out.Summary, tc.dir+"/") || !strings.Contains(out.Summary, "pass") {
				t.Errorf("the demo did not finish with a summary of what it did: last call %s, outcome %+v", last.Name, out)
			}
			if len(l.of(drydock.EventModel)) != len(calls) || len(l.of(drydock.EventUsage)) != len(calls) {
				t.Errorf("every step needs a model turn and usage: %d model, %d usage, %d calls", len(l.of(drydock.EventModel)), len(l.of(drydock.EventUsage)), len(calls))
			}
		})
	}
}

// A headless sandbox gets no desktop step; a sandbox whose toolbox serves
// no desktop cannot show anything.
func TestDemoWithoutDesktopTakesNoScreenshot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l, _, err := b.run(t, t.Context(), "Build me a todo app in React"+fast)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range l.calls(t) {
		if c.Name == "computer" || strings.Contains(string(c.Input), "xterm") {
			t.Errorf("a headless demo tried the desktop: %s %s", c.Name, c.Input)
		}
	}
}

// The task is data: it reaches files through the editor, never a command
// line, and the project's directory is made of plain words.
func TestDemoTaskCannotInjectCommands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	marker := filepath.Join(t.TempDir(), "pwned")
	task := "Build a React app'; touch " + marker + "; echo '$(touch " + marker + ") {{.Name}} `touch " + marker + "`\n> </script>"
	l, _, err := b.run(t, t.Context(), task+fast)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the task's text ran as a command")
	}
	for _, c := range l.calls(t) {
		if c.Name == "bash" && strings.Contains(string(c.Input), marker) {
			t.Errorf("the task's text reached a command: %s", c.Input)
		}
	}
	entries, _ := os.ReadDir(b.rt.Workspace(b.sb.ID))
	for _, e := range entries {
		if e.Name() != ".drydock" && strings.Trim(e.Name(), "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			t.Errorf("project directory %q is not made of plain words", e.Name())
		}
	}
	readme := b.file(t, "react-app-touch/README.md")
	if !strings.Contains(readme, "{{.Name}}") || !strings.Contains(readme, "> > </script>") {
		t.Errorf("README.md does not quote the task as it is:\n%s", readme)
	}
}

// A restarted job continues the demo after its last recorded step instead
// of starting over.
func TestDemoResumesFromTheLog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const task = "Write a Python todo app" + fast
	first, _, err := b.run(t, t.Context(), task)
	if err != nil {
		t.Fatal(err)
	}
	// The log as it stood after step 3's observation.
	var history []*drydock.Event
	seen := 0
	for _, e := range first.events {
		history = append(history, e)
		if e.Type == drydock.EventObservation {
			if seen++; seen == 3 {
				break
			}
		}
	}
	// Step 4 onwards again (the files they wrote are gone, as if the
	// server stopped before writing them).
	os.RemoveAll(filepath.Join(b.rt.Workspace(b.sb.ID), "python-todo-app", "test_todo.py"))
	second, out, err := b.run(t, t.Context(), task, history...)
	if err != nil {
		t.Fatal(err)
	}
	calls := second.calls(t)
	if len(calls) == 0 || calls[0].ID != "call_4" || calls[0].Step != 4 {
		t.Fatalf("the resumed demo did not start at step 4: %+v", calls)
	}
	if got, want := len(calls)+3, len(first.calls(t)); got != want {
		t.Errorf("resumed demo ran %d steps in all, want %d", got, want)
	}
	if out == nil || !strings.Contains(out.Summary, "pass") {
		t.Errorf("resumed summary: %+v", out)
	}
}

// The directives tests across the repository steer the agent with keep
// their meaning: steps=N writes N notes (not the demo), fail and hang end
// the demo as they end the notes, and a directive the agent does not know
// is a clear error.
func TestDirectives(t *testing.T) {
	t.Parallel()
	t.Run("steps writes notes", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		l, out, err := b.run(t, t.Context(), "Build me a todo app in React [fake:steps=2] [fake:delay=0s]")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"notes/step-001.md", "notes/step-002.md", "SUMMARY.md"} {
			b.file(t, f)
		}
		if out.Summary != "Completed 2 scripted steps; notes are in notes/ and SUMMARY.md." || l.steps != 2 {
			t.Errorf("summary %q after %d steps", out.Summary, l.steps)
		}
		if _, err := os.Stat(filepath.Join(b.rt.Workspace(b.sb.ID), "todo-app-react")); err == nil {
			t.Error("[fake:steps=N] ran the demo too")
		}
	})
	t.Run("fail ends the demo with the error", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		l, out, err := b.run(t, t.Context(), "a python tool [fake:delay=0s] [fake:fail=compiler exploded]")
		if err == nil || drydock.ErrorMessage(err) != "compiler exploded" || out != nil {
			t.Fatalf("got %v, %+v; want the scripted failure", err, out)
		}
		for _, c := range l.calls(t) {
			if c.Name == "finish" {
				t.Error("a failing demo called finish")
			}
		}
		b.file(t, "python-tool/item.py")
	})
	t.Run("hang waits after the demo until cancelled", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		var l *log
		go func() {
			var err error
			l, _, err = b.run(t, ctx, "a python tool [fake:delay=0s] [fake:hang]")
			done <- err
		}()
		// The demo's last file appears before the hang.
		deadline := time.Now().Add(time.Minute)
		for {
			if time.Now().After(deadline) {
				cancel()
				t.Fatal("the demo did not write its project before hanging")
			}
			if _, err := os.Stat(filepath.Join(b.rt.Workspace(b.sb.ID), "python-tool", "items.json")); err == nil {
				break
			}
			select {
			case err := <-done:
				t.Fatalf("returned before being cancelled: %v", err)
			case <-time.After(20 * time.Millisecond):
			}
		}
		cancel()
		if err := <-done; err != context.Canceled {
			t.Fatalf("got %v, want context.Canceled", err)
		}
		for _, c := range l.calls(t) {
			if c.Name == "finish" {
				t.Error("a hanging demo called finish")
			}
		}
	})
	t.Run("unknown directive", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, _, err := b.run(t, t.Context(), "x [fake:explode]")
		if drydock.ErrorCode(err) != drydock.EINVALID || !strings.Contains(drydock.ErrorMessage(err), `unknown directive "explode"`) {
			t.Errorf("got %v", err)
		}
	})
}
