package fake_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/fake"
	"github.com/drydockhq/drydock/toolbox"
)

// runOpts is what a run gives the agent besides its task: the usage the
// job had, its log so far, the pause hold, and a hook on progress.
type runOpts struct {
	usage    drydock.Usage
	history  []*drydock.Event
	hold     func(ctx context.Context) (*drydock.PauseSummary, error)
	progress func(steps int)
}

// runWith runs the agent on task with o, recording what it emits and the
// last progress it reported.
func (b *bundle) runWith(t *testing.T, ctx context.Context, task string, o runOpts) (*log, *drydock.AgentOutcome, error) {
	t.Helper()
	l := &log{}
	var usage drydock.Usage
	out, err := b.agent.Run(ctx, &drydock.AgentRun{
		Job:     &drydock.Job{ID: "job-1", JobSpec: drydock.JobSpec{Task: task}, Usage: o.usage},
		Sandbox: b.sb,
		Events:  l,
		History: o.history,
		Hold:    o.hold,
		Progress: func(_ context.Context, steps int, u drydock.Usage) error {
			l.mu.Lock()
			l.steps, usage = steps, u
			l.mu.Unlock()
			if o.progress != nil {
				o.progress(steps)
			}
			return nil
		},
	})
	l.mu.Lock()
	l.usage = usage
	l.mu.Unlock()
	return l, out, err
}

// [fake:steps=N] writes one note per step with the events the LLM agent
// emits for a step (model turn, tool call, observation, usage, in that
// order), reports progress after each, adds its usage to what the job had
// used, and ends with SUMMARY.md.
func TestNotesAreStepsOfTheLLMAgentsShape(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := drydock.Usage{InputTokens: 1000, OutputTokens: 100}
	l, out, err := b.runWith(t, t.Context(), "Write notes [fake:steps=3] [fake:delay=0s]\nsecond line", runOpts{usage: before})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	var sum drydock.Usage
	for _, e := range l.events {
		types = append(types, string(e.Type))
		if e.Type == drydock.EventUsage {
			var u drydock.Usage
			if err := json.Unmarshal(e.Data, &u); err != nil {
				t.Fatal(err)
			}
			sum = sum.Add(u)
		}
	}
	step := "model tool_call observation usage"
	if got, want := strings.Join(types, " "), strings.Repeat(step+" ", 3); got != strings.TrimSpace(want) {
		t.Errorf("events %q; want %q three times", got, step)
	}
	if l.steps != 3 || l.usage != before.Add(sum) {
		t.Errorf("progress: %d steps, usage %+v; want 3 steps and %+v (the job's usage plus each step's)", l.steps, l.usage, before.Add(sum))
	}
	for i, c := range l.calls(t) {
		var in map[string]string
		json.Unmarshal(c.Input, &in)
		path := fmt.Sprintf("notes/step-%03d.md", i+1)
		if c.ID != fmt.Sprintf("call_%d", i+1) || c.Name != "str_replace_based_edit_tool" || in["command"] != "create" || in["path"] != path {
			t.Errorf("call %d = %s %s %s; want the editor creating %s", i+1, c.ID, c.Name, c.Input, path)
		}
		if got, want := b.file(t, path), fmt.Sprintf("# Step %d\n\nTask: Write notes [fake:steps=3] [fake:delay=0s]\n", i+1); got != want {
			t.Errorf("%s = %q; want %q (the task's first line)", path, got, want)
		}
	}
	for _, o := range l.observations(t) {
		if o.IsError || !strings.HasPrefix(o.Output, "File created successfully at: notes/") {
			t.Errorf("observation %+v; want the file created", o)
		}
	}
	if want := "Completed 3 scripted steps; notes are in notes/ and SUMMARY.md."; out == nil || out.Summary != want || b.file(t, "SUMMARY.md") != want+"\n" {
		t.Errorf("outcome %+v; want %q, also in SUMMARY.md", out, want)
	}
}

// A recovered job's notes continue after the last step its log shows.
func TestNotesResumeFromTheLog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const task = "[fake:steps=4] [fake:delay=0s]"
	first, _, err := b.runWith(t, t.Context(), "[fake:steps=2] [fake:delay=0s]", runOpts{})
	if err != nil {
		t.Fatal(err)
	}
	l, out, err := b.runWith(t, t.Context(), task, runOpts{history: first.events})
	if err != nil {
		t.Fatal(err)
	}
	calls := l.calls(t)
	if len(calls) != 2 || calls[0].ID != "call_3" || calls[1].ID != "call_4" || l.steps != 4 {
		t.Errorf("resumed calls %+v, %d steps; want steps 3 and 4 only", calls, l.steps)
	}
	if out == nil || !strings.HasPrefix(out.Summary, "Completed 4 scripted steps") {
		t.Errorf("outcome %+v", out)
	}
}

// fail ends the notes with its text as the error once the steps are
// written, and without a summary; hang waits after them until cancelled.
func TestNotesFailAndHang(t *testing.T) {
	t.Parallel()
	t.Run("fail", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		l, out, err := b.runWith(t, t.Context(), "[fake:steps=2] [fake:delay=0s] [fake:fail=disk on fire]", runOpts{})
		if drydock.ErrorCode(err) != drydock.EINVALID || drydock.ErrorMessage(err) != "disk on fire" || out != nil {
			t.Fatalf("got %v, %+v; want the scripted failure", err, out)
		}
		if l.steps != 2 {
			t.Errorf("%d steps before failing; want 2", l.steps)
		}
		b.file(t, "notes/step-002.md")
		if _, err := os.Stat(filepath.Join(b.rt.Workspace(b.sb.ID), "SUMMARY.md")); err == nil {
			t.Error("a failing run wrote SUMMARY.md")
		}
	})
	t.Run("fail without text", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, _, err := b.runWith(t, t.Context(), "[fake:steps=0] [fake:fail]", runOpts{})
		if drydock.ErrorMessage(err) != "scripted failure" {
			t.Errorf("got %v; want the default text", err)
		}
	})
	t.Run("hang", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		// Cancelled once the last step is reported: the run must then be
		// waiting, not finished.
		l, out, err := b.runWith(t, ctx, "[fake:steps=2] [fake:delay=0s] [fake:hang]", runOpts{progress: func(n int) {
			if n == 2 {
				cancel()
			}
		}})
		if !errors.Is(err, context.Canceled) || out != nil {
			t.Fatalf("got %v, %+v; want context.Canceled", err, out)
		}
		if l.steps != 2 {
			t.Errorf("%d steps; want both before the hang", l.steps)
		}
	})
}

// failingWrites is a workspace whose writes to one path fail.
type failingWrites struct {
	*toolbox.Client
	path string
}

func (f failingWrites) WriteFile(ctx context.Context, p string, data []byte) error {
	if p == f.path {
		return drydock.Errorf(drydock.EFORBIDDEN, "read-only file system")
	}
	return f.Client.WriteFile(ctx, p, data)
}

// A note that cannot be written is an observation with the error, as a
// tool's failure is for the LLM agent; the run goes on.
func TestNotesWriteFailureIsAnObservation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := toolbox.New(b.sb.Endpoint, b.sb.Token)
	t.Cleanup(c.Close)
	b.agent = &fake.Agent{Dial: func(*drydock.Sandbox) fake.Workspace { return failingWrites{c, "notes/step-002.md"} }}
	l, out, err := b.runWith(t, t.Context(), "[fake:steps=3] [fake:delay=0s]", runOpts{})
	if err != nil {
		t.Fatal(err)
	}
	obs := l.observations(t)
	if len(obs) != 3 || obs[0].IsError || !obs[1].IsError || !strings.Contains(obs[1].Output, "read-only file system") || obs[2].IsError {
		t.Errorf("observations %+v; want the second one an error naming why", obs)
	}
	if out == nil || l.steps != 3 {
		t.Errorf("outcome %+v after %d steps; want all three and a summary", out, l.steps)
	}
}

// The agent waits on Hold before every step, in notes and in the demo, so
// that a paused job pauses; an error from Hold ends the run there.
func TestHoldBeforeEveryStep(t *testing.T) {
	t.Parallel()
	for _, task := range []string{"[fake:steps=3] [fake:delay=0s]", "a python tool [fake:delay=0s]"} {
		t.Run(task, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var mu sync.Mutex
			var order []string
			var l *log
			hold := func(context.Context) (*drydock.PauseSummary, error) {
				mu.Lock()
				defer mu.Unlock()
				order = append(order, fmt.Sprintf("hold after %d", len(l.of(drydock.EventObservation))))
				return nil, nil
			}
			l = &log{}
			out, err := b.agent.Run(t.Context(), &drydock.AgentRun{
				Job: &drydock.Job{ID: "job-1", JobSpec: drydock.JobSpec{Task: task}}, Sandbox: b.sb, Events: l, Hold: hold,
				Progress: func(context.Context, int, drydock.Usage) error { return nil },
			})
			if err != nil || out == nil {
				t.Fatalf("got %+v, %v", out, err)
			}
			n := len(l.of(drydock.EventObservation))
			if len(order) != n {
				t.Fatalf("held %d times for %d steps: %v", len(order), n, order)
			}
			for i, o := range order {
				if o != fmt.Sprintf("hold after %d", i) {
					t.Errorf("hold %d came %q; want before step %d", i+1, o, i+1)
				}
			}
		})
	}
	t.Run("an error ends the run", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		stop := errors.New("job cancelled while paused")
		calls := 0
		l, out, err := b.runWith(t, t.Context(), "[fake:steps=3] [fake:delay=0s]", runOpts{hold: func(context.Context) (*drydock.PauseSummary, error) {
			if calls++; calls == 2 {
				return nil, stop
			}
			return nil, nil
		}})
		if !errors.Is(err, stop) || out != nil || l.steps != 1 {
			t.Errorf("got %+v, %v after %d steps; want Hold's error after step 1", out, err, l.steps)
		}
	})
}

// Directives are checked before any work: a bad one is a clear invalid
// error and the sandbox is never reached.
func TestBadDirectivesAreRefusedFirst(t *testing.T) {
	t.Parallel()
	agent := &fake.Agent{Dial: func(*drydock.Sandbox) fake.Workspace {
		t.Error("the agent reached the sandbox with a bad directive")
		return nil
	}}
	cases := map[string]string{
		"[fake:steps=many]":                     `steps must be 0..10000, got "many"`,
		"[fake:steps=-1]":                       `steps must be 0..10000, got "-1"`,
		"[fake:steps=10001]":                    `steps must be 0..10000, got "10001"`,
		"[fake:delay=soon]":                     `bad delay "soon"`,
		"[fake:delay=-1s]":                      `bad delay "-1s"`,
		"[fake:explode]":                        `unknown directive "explode"`,
		"ok [fake:steps=1] then [fake:bogus=1]": `unknown directive "bogus"`,
	}
	for task, want := range cases {
		_, err := agent.Run(t.Context(), &drydock.AgentRun{Job: &drydock.Job{ID: "job-1", JobSpec: drydock.JobSpec{Task: task}}})
		if drydock.ErrorCode(err) != drydock.EINVALID || !strings.Contains(drydock.ErrorMessage(err), want) {
			t.Errorf("%s: got %v; want invalid, %q", task, err, want)
		}
	}
}

// unreachable is a workspace whose toolbox does not answer.
type unreachable struct{ *toolbox.Client }

func (unreachable) Info(context.Context) (*toolbox.Info, error) {
	return nil, drydock.Errorf(drydock.EUNAVAILABLE, "connection refused")
}

// A demo whose sandbox's toolbox does not answer fails at once with a
// retryable unavailable error that says so.
func TestDemoWithAToolboxThatDoesNotAnswer(t *testing.T) {
	t.Parallel()
	agent := &fake.Agent{Dial: func(*drydock.Sandbox) fake.Workspace { return unreachable{} }}
	l := &log{}
	_, err := agent.Run(t.Context(), &drydock.AgentRun{Job: &drydock.Job{ID: "job-1", JobSpec: drydock.JobSpec{Task: "a python tool"}}, Events: l})
	if drydock.ErrorCode(err) != drydock.EUNAVAILABLE || !strings.Contains(drydock.ErrorMessage(err), "the sandbox's toolbox does not answer: connection refused") {
		t.Errorf("got %v", err)
	}
	if len(l.events) != 0 {
		t.Errorf("events %d; want none before the toolbox answers", len(l.events))
	}
}

// A demo recovered after its finish step was recorded runs nothing again
// and ends with the summary it recorded.
func TestDemoRecoveredAfterItsFinishEndsWithTheRecordedSummary(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const task = "a python tool [fake:delay=0s]"
	first, out1, err := b.runWith(t, t.Context(), task, runOpts{})
	if err != nil {
		t.Fatal(err)
	}
	again, out2, err := b.runWith(t, t.Context(), task, runOpts{history: first.events})
	if err != nil {
		t.Fatal(err)
	}
	if len(again.events) != 0 || out2 == nil || out2.Summary != out1.Summary {
		t.Errorf("recovered run: %d events, outcome %+v; want none and the summary %q", len(again.events), out2, out1.Summary)
	}
}
