package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// gate is a scripted AgentRun.Hold: call n (from 1) blocks when the test
// holds it, until the test lets it go or ctx ends.
type gate struct {
	mu      sync.Mutex
	calls   int
	holdAt  int
	waiting chan struct{} // closed when the held call starts waiting
	release chan *drydock.PauseSummary
}

func newGate(holdAt int) *gate {
	return &gate{holdAt: holdAt, waiting: make(chan struct{}), release: make(chan *drydock.PauseSummary)}
}

func (g *gate) Hold(ctx context.Context) (*drydock.PauseSummary, error) {
	g.mu.Lock()
	g.calls++
	n := g.calls
	g.mu.Unlock()
	if n != g.holdAt {
		return nil, nil
	}
	close(g.waiting)
	select {
	case p := <-g.release:
		return p, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (b *bundle) runHeld(ctx context.Context, j *drydock.Job, hold func(context.Context) (*drydock.PauseSummary, error)) (*drydock.AgentOutcome, error) {
	return b.agent.Run(ctx, &drydock.AgentRun{
		Job: j, Sandbox: b.sb, Events: b.rec, Hold: hold,
		Progress: func(context.Context, int, drydock.Usage) error { return nil },
	})
}

// While the job is held the agent calls neither the model nor a tool; the
// call before the pause finished; after it, the model is told of the pause.
func TestHeldAgentMakesNoCallsAndIsToldOfThePause(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{Turns: []llmtest.Turn{
		{ToolCalls: []llm.ToolCall{
			call("bash", map[string]string{"command": "echo one > one.txt"}),
			call("bash", map[string]string{"command": "echo two > two.txt"}),
		}},
		finish("done"),
	}}, agent.Config{})
	// Holds: 1 before the first model call, 2 before the first tool call,
	// 3 before the second: the pause comes while the first call runs.
	g := newGate(3)
	done := make(chan error, 1)
	go func() {
		_, err := b.runHeld(t.Context(), job("two files"), g.Hold)
		done <- err
	}()
	select {
	case <-g.waiting:
	case err := <-done:
		t.Fatalf("run ended before the pause: %v", err)
	}
	if n := len(b.srv.Requests()); n != 1 {
		t.Fatalf("%d model requests while held; want only the first", n)
	}
	if got := b.file(t, "one.txt"); got != "one\n" {
		t.Fatalf("the call before the pause did not finish: one.txt = %q", got)
	}
	if _, err := os.Stat(filepath.Join(b.ws, "two.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the second call ran while held: %v", err)
	}
	if n := len(b.rec.ofType(drydock.EventToolCall)); n != 1 {
		t.Fatalf("%d tool_call events while held; want 1", n)
	}
	from := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	g.release <- &drydock.PauseSummary{From: from, To: from.Add(90 * time.Second), By: []string{"alice"}, Reasons: []drydock.PauseReason{drydock.PauseUser}}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := b.file(t, "two.txt"); got != "two\n" {
		t.Fatalf("two.txt = %q after the pause", got)
	}
	reqs := b.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests; want 2", len(reqs))
	}
	next := reqs[1].LastUser()
	if len(next.ToolResults) != 2 {
		t.Fatalf("the turn after the pause has %d results; want both calls' (the notice never splits a call from its result)", len(next.ToolResults))
	}
	contains(t, "the prompt after the pause", next.Text, "paused from 10:00:00 UTC to 10:01:30 UTC (1m30s) by alice")
}

// Cancel ends a held run at once, without another model call.
func TestCancelWhileHeld(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{Turns: []llmtest.Turn{
		{ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "true"})}},
		finish("done"),
	}}, agent.Config{})
	g := newGate(1) // held before the first model call
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := b.runHeld(ctx, job("x"), g.Hold)
		done <- err
	}()
	select {
	case <-g.waiting:
	case err := <-done:
		t.Fatalf("run ended without waiting: %v", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("run = %v; want it cancelled", err)
	}
	if n := len(b.srv.Requests()); n != 0 {
		t.Fatalf("%d model requests; a job paused from the start makes none", n)
	}
}

// A pause the runner could not read ends the run rather than letting the
// agent go on unpaused.
func TestHoldFailureEndsTheRun(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{Turns: []llmtest.Turn{finish("done")}}, agent.Config{})
	_, err := b.runHeld(t.Context(), job("x"), func(context.Context) (*drydock.PauseSummary, error) {
		return nil, errors.New("store down")
	})
	if err == nil || !strings.Contains(err.Error(), "store down") {
		t.Fatalf("run = %v; want the hold's error", err)
	}
	if n := len(b.srv.Requests()); n != 0 {
		t.Fatalf("%d model requests", n)
	}
}

// A run resumed after a restart still shows the screenshot a take-over
// notice carried: it reads the picture back from the workspace as it does
// a tool's.
func TestResumeShowsTheScreenshotOfATakeOverNotice(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{Turns: []llmtest.Turn{finish("done")}}, agent.Config{})
	png := []byte("\x89PNG\r\n\x1a\n-the-desktop-after-a-person-used-it")
	const shot = ".drydock/screenshots/step-0001-after-takeover-1.png"
	if err := os.MkdirAll(filepath.Join(b.ws, filepath.Dir(shot)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.ws, shot), png, 0o644); err != nil {
		t.Fatal(err)
	}
	var history []*drydock.Event
	add := func(typ drydock.EventType, v any) {
		e := drydock.NewEvent("job-1", typ, v)
		e.Seq, e.Time = int64(len(history)+1), time.Now()
		history = append(history, e)
	}
	c := call("bash", map[string]string{"command": "true"})
	c.ID = "c1"
	add(drydock.EventModel, map[string]any{"step": 1, "tool_calls": []llm.ToolCall{c}})
	add(drydock.EventObservation, map[string]any{"step": 1, "id": "c1", "name": "bash", "output": ""})
	add(drydock.EventLog, map[string]any{"level": "info", "notice": true, "step": 1, "message": "A person used the desktop.",
		"images": []map[string]string{{"path": shot, "media_type": "image/png"}}})
	if _, err := b.run(t.Context(), job("x"), history); err != nil {
		t.Fatal(err)
	}
	last := b.srv.Requests()[0].LastUser()
	if len(last.Images) != 1 || string(last.Images[0].Data) != string(png) {
		t.Fatalf("the resumed prompt's last user message has %d images; want the take-over's screenshot", len(last.Images))
	}
}
