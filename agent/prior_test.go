package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// priorOf is what the runner gives a follow-up of a job that was asked
// task and logged events: the task, then the events of the kinds a prompt
// is built from.
func priorOf(jobID, task string, events []*drydock.Event) []*drydock.Event {
	out := []*drydock.Event{drydock.NewEvent(jobID, drydock.EventTask, map[string]string{"text": task, "status": string(drydock.StatusComplete)})}
	for _, e := range events {
		if slices.Contains(drydock.PriorKinds, e.Type) {
			out = append(out, e)
		}
	}
	return out
}

// modelSteps are the step numbers of the model turns in events.
func modelSteps(t *testing.T, events []*drydock.Event) []int {
	t.Helper()
	var steps []int
	for _, e := range events {
		if e.Type == drydock.EventModel {
			var m transcript.ModelTurn
			if err := json.Unmarshal(e.Data, &m); err != nil {
				t.Fatal(err)
			}
			steps = append(steps, m.Step)
		}
	}
	return steps
}

// text is every text of a request's conversation, in order.
func text(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Text + "\n")
		for _, c := range m.ToolCalls {
			b.Write(c.Input)
			b.WriteString("\n")
		}
		for _, r := range m.ToolResults {
			b.WriteString(r.Output + "\n")
		}
	}
	return b.String()
}

// A follow-up's first prompt is the parent's conversation (its task
// first, then its steps) followed by the new message; the parent's
// finish does not end the follow-up, its steps do not count against the
// follow-up's budget, and its usage is not the follow-up's. A follow-up of
// that follow-up sees both earlier jobs, each message after the work it
// continued.
func TestFollowUpContinuesTheParentsConversation(t *testing.T) {
	t.Parallel()
	apis(t, func(t *testing.T, api string) {
		parent := setup(t, api, llmtest.Options{Turns: []llmtest.Turn{
			{Text: "Writing the notes.", ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "echo 'parent-was-here' > notes.txt && cat notes.txt"})}},
			finish("wrote notes.txt"),
		}}, agent.Config{})
		pj := job("Write notes.txt.")
		if _, err := parent.run(t.Context(), pj, nil); err != nil {
			t.Fatal(err)
		}

		// The follow-up, in the parent's workspace as the runner restores
		// it; a budget of one step, which the parent's two would exceed.
		child := newBundle(t, parent.sb, api, llmtest.Options{Turns: []llmtest.Turn{
			{Text: "Adding the footer.", ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "echo footer >> notes.txt"})}},
		}}, agent.Config{})
		cj := &drydock.Job{ID: "job-2", Status: drydock.StatusRunning, ParentJobID: pj.ID, JobSpec: drydock.JobSpec{Task: "Now add a footer.", MaxSteps: 1}}
		prior := priorOf(pj.ID, pj.Task, parent.rec.Events())
		out, err := child.agent.Run(t.Context(), &drydock.AgentRun{Job: cj, Sandbox: child.sb, Events: child.rec, Prior: prior,
			Progress: func(_ context.Context, steps int, usage drydock.Usage) error {
				child.rec.progress = append(child.rec.progress, progress{steps, usage})
				return nil
			}})
		// One step, no finish: the step budget ends it, after a model call.
		if err == nil || !strings.Contains(err.Error(), "all of its 1 steps") {
			t.Fatalf("follow-up ended with %+v, %v; want its own one-step budget spent", out, err)
		}
		reqs := child.srv.Requests()
		if len(reqs) != 1 {
			t.Fatalf("the follow-up made %d model requests; want 1 (the parent's finish must not end it, nor its steps spend its budget)", len(reqs))
		}
		first := reqs[0].Messages
		contains(t, "first message", first[0].Text, "Write notes.txt.")
		all := text(first)
		contains(t, "first prompt", all, "Writing the notes.", "parent-was-here", "wrote notes.txt", "# Follow-up\nThe work above is complete.", "Now add a footer.")
		if strings.Index(all, "parent-was-here") > strings.Index(all, "Now add a footer.") {
			t.Error("the new message comes before the parent's steps")
		}
		if last := reqs[0].LastUser(); !strings.Contains(last.Text, "Now add a footer.") {
			t.Errorf("the last user message %q is not the new message", last.Text)
		}
		if got := parent.file(t, "notes.txt"); got != "parent-was-here\nfooter\n" {
			t.Errorf("notes.txt = %q", got)
		}
		if steps := modelSteps(t, child.rec.Events()); !slices.Equal(steps, []int{3}) {
			t.Errorf("the follow-up's steps are numbered %v; want [3], after the parent's 2", steps)
		}
		p := child.rec.progress
		if len(p) != 1 || p[0].steps != 1 || p[0].usage.InputTokens != reqs[0].Answer.Usage.InputTokens {
			t.Errorf("progress %+v; want 1 step and the follow-up's own usage (%d input tokens)", p, reqs[0].Answer.Usage.InputTokens)
		}

		// A follow-up of the follow-up.
		grand := newBundle(t, parent.sb, api, llmtest.Options{Turns: []llmtest.Turn{finish("all done")}}, agent.Config{})
		prior = append(prior, priorOf(cj.ID, cj.Task, child.rec.Events())...)
		gj := &drydock.Job{ID: "job-3", Status: drydock.StatusRunning, ParentJobID: cj.ID, JobSpec: drydock.JobSpec{Task: "Now a header."}}
		out, err = grand.agent.Run(t.Context(), &drydock.AgentRun{Job: gj, Sandbox: grand.sb, Events: grand.rec, Prior: prior,
			Progress: func(context.Context, int, drydock.Usage) error { return nil }})
		if err != nil || out.Summary != "all done" {
			t.Fatalf("follow-up of a follow-up: %+v, %v", out, err)
		}
		msgs := grand.srv.Requests()[0].Messages
		contains(t, "first message", msgs[0].Text, "Write notes.txt.")
		all = text(msgs)
		order := []string{"parent-was-here", "Now add a footer.", "Adding the footer.", "Now a header."}
		for i := 1; i < len(order); i++ {
			if a, b := strings.Index(all, order[i-1]), strings.Index(all, order[i]); a < 0 || b < 0 || a > b {
				t.Errorf("%q should come before %q in the prompt:\n%s", order[i-1], order[i], all)
			}
		}
		if steps := modelSteps(t, grand.rec.Events()); !slices.Equal(steps, []int{4}) {
			t.Errorf("the second follow-up's steps are numbered %v; want [4]", steps)
		}
	})
}

// A follow-up resumed after a restart goes on from its own log: its
// steps so far count against its budget, the ancestors' still do not, and
// the prompt holds the message once.
func TestFollowUpResumes(t *testing.T) {
	t.Parallel()
	parent := setup(t, agent.ProviderOpenAI, llmtest.Options{Turns: []llmtest.Turn{
		{ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "echo one > a.txt"})}},
		finish("parent done"),
	}}, agent.Config{})
	pj := job("Write a.txt.")
	if _, err := parent.run(t.Context(), pj, nil); err != nil {
		t.Fatal(err)
	}
	prior := priorOf(pj.ID, pj.Task, parent.rec.Events())
	cj := &drydock.Job{ID: "job-2", Status: drydock.StatusRunning, ParentJobID: pj.ID, JobSpec: drydock.JobSpec{Task: "Append two.", MaxSteps: 2}}
	first := newBundle(t, parent.sb, agent.ProviderOpenAI, llmtest.Options{Turns: []llmtest.Turn{
		{ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "echo two >> a.txt"})}},
	}}, agent.Config{MaxSteps: 1}) // the server's limit stops the first run after one step
	cj1 := *cj
	cj1.MaxSteps = 1
	if _, err := first.agent.Run(t.Context(), &drydock.AgentRun{Job: &cj1, Sandbox: first.sb, Events: first.rec, Prior: prior,
		Progress: func(context.Context, int, drydock.Usage) error { return nil }}); err == nil {
		t.Fatal("the first run did not stop at its step limit")
	}
	// Resume with the log so far but the budget error (as if the server
	// had stopped after the step).
	var history []*drydock.Event
	for _, e := range first.rec.Events() {
		if e.Type != drydock.EventError {
			history = append(history, e)
		}
	}
	again := newBundle(t, parent.sb, agent.ProviderOpenAI, llmtest.Options{Turns: []llmtest.Turn{finish("appended")}}, agent.Config{})
	var got []int
	out, err := again.agent.Run(t.Context(), &drydock.AgentRun{Job: cj, Sandbox: again.sb, Events: again.rec, Prior: prior, History: history,
		Progress: func(_ context.Context, steps int, _ drydock.Usage) error { got = append(got, steps); return nil }})
	if err != nil || out.Summary != "appended" {
		t.Fatalf("resumed follow-up: %+v, %v", out, err)
	}
	if !slices.Equal(got, []int{2}) {
		t.Errorf("progress steps %v; want [2]: one before the restart, one after", got)
	}
	if steps := modelSteps(t, again.rec.Events()); !slices.Equal(steps, []int{4}) {
		t.Errorf("the resumed follow-up's step is numbered %v; want [4]", steps)
	}
	if n := strings.Count(text(again.srv.Requests()[0].Messages), "Append two."); n != 1 {
		t.Errorf("the message is %d times in the resumed prompt; want once", n)
	}
}

// The screenshots of the ancestors' latest steps come back from the
// restored workspace into the follow-up's first prompt, as a resumed
// run's do.
func TestFollowUpShowsTheParentsScreenshots(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderAnthropic, llmtest.Options{Turns: []llmtest.Turn{finish("seen")}}, agent.Config{Images: "on"})
	png := tinyPNG(t)
	shot := ".drydock/screenshots/step-0001-c1-1.png"
	if err := os.MkdirAll(filepath.Join(b.ws, filepath.Dir(shot)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.ws, shot), png, 0o644); err != nil {
		t.Fatal(err)
	}
	prior := []*drydock.Event{
		drydock.NewEvent("job-0", drydock.EventTask, map[string]string{"text": "Look at the screen."}),
		drydock.NewEvent("job-0", drydock.EventModel, transcript.ModelTurn{Step: 1, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "computer", Input: json.RawMessage(`{"action": "screenshot"}`)}}}),
		drydock.NewEvent("job-0", drydock.EventObservation, transcript.Observation{Step: 1, ID: "c1", Name: "computer",
			Images: []transcript.ImageRef{{Path: shot, MediaType: "image/png", Width: 1, Height: 1}}}),
	}
	cj := &drydock.Job{ID: "job-1", Status: drydock.StatusRunning, ParentJobID: "job-0", JobSpec: drydock.JobSpec{Task: "What did you see?"}}
	if _, err := b.agent.Run(t.Context(), &drydock.AgentRun{Job: cj, Sandbox: b.sb, Events: b.rec, Prior: prior,
		Progress: func(context.Context, int, drydock.Usage) error { return nil }}); err != nil {
		t.Fatal(err)
	}
	var images int
	for _, m := range b.srv.Requests()[0].Messages {
		for _, r := range m.ToolResults {
			images += len(r.Images)
		}
	}
	if images != 1 {
		t.Errorf("the follow-up's first prompt shows %d images; want the parent's screenshot", images)
	}
}

func tinyPNG(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 1, 1))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The follow-up's message says how the work before it ended: a model
// continuing a failed run should know it failed.
func TestFollowUpSaysHowTheParentEnded(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{Turns: []llmtest.Turn{finish("ok")}}, agent.Config{})
	prior := []*drydock.Event{drydock.NewEvent("job-0", drydock.EventTask, map[string]string{"text": "Build it.", "status": "error", "error": "job timed out after 10m0s"})}
	cj := &drydock.Job{ID: "job-1", Status: drydock.StatusRunning, ParentJobID: "job-0", JobSpec: drydock.JobSpec{Task: "Try again, faster."}}
	if _, err := b.agent.Run(t.Context(), &drydock.AgentRun{Job: cj, Sandbox: b.sb, Events: b.rec, Prior: prior,
		Progress: func(context.Context, int, drydock.Usage) error { return nil }}); err != nil {
		t.Fatal(err)
	}
	// The parent made no step: the message joins the first one.
	contains(t, "first message", b.srv.Requests()[0].Messages[0].Text, "Build it.", "The work above ended with an error: job timed out after 10m0s.", "Try again, faster.")
}
