package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/tools"
	"github.com/drydockhq/drydock/toolbox"
)

// Workspace is the part of the toolbox client the fake agent uses: the
// tools' (the demo runs the LLM agent's own tools) and the sandbox's info.
// *toolbox.Client implements it.
type Workspace interface {
	tools.Box
	Info(ctx context.Context) (*toolbox.Info, error)
}

var _ Workspace = (*toolbox.Client)(nil)

// Agent is the scripted agent.
type Agent struct {
	// Dial connects to a sandbox's toolboxd.
	Dial func(*drydock.Sandbox) Workspace
}

var _ drydock.Agent = (*Agent)(nil)

type script struct {
	// notes: [fake:steps=N] asks for N notes instead of the demo.
	notes bool
	steps int
	delay time.Duration
	fail  string
	hang  bool
}

var directive = regexp.MustCompile(`\[fake:([a-z]+)(?:=([^\]]*))?\]`)

func parse(task string) (script, error) {
	s := script{steps: 3, delay: 300 * time.Millisecond}
	for _, m := range directive.FindAllStringSubmatch(task, -1) {
		switch m[1] {
		case "steps":
			n, err := strconv.Atoi(m[2])
			if err != nil || n < 0 || n > 10000 {
				return s, drydock.Errorf(drydock.EINVALID, "fake agent: steps must be 0..10000, got %q", m[2])
			}
			s.steps, s.notes = n, true
		case "delay":
			d, err := time.ParseDuration(m[2])
			if err != nil || d < 0 {
				return s, drydock.Errorf(drydock.EINVALID, "fake agent: bad delay %q", m[2])
			}
			s.delay = d
		case "fail":
			s.fail = m[2]
			if s.fail == "" {
				s.fail = "scripted failure"
			}
		case "hang":
			s.hang = true
		default:
			return s, drydock.Errorf(drydock.EINVALID, "fake agent: unknown directive %q", m[1])
		}
	}
	return s, nil
}

// Run performs the demo, or the notes that [fake:steps=N] asks for,
// skipping the steps the event log shows as done, so a recovered job
// continues where it stopped.
func (a *Agent) Run(ctx context.Context, run *drydock.AgentRun) (*drydock.AgentOutcome, error) {
	sc, err := parse(run.Job.Task)
	if err != nil {
		return nil, err
	}
	done := 0
	for _, e := range run.History {
		if e.Type == drydock.EventObservation {
			done++
		}
	}
	if !sc.notes {
		return a.demo(ctx, run, sc, done)
	}
	return a.writeNotes(ctx, run, sc, done)
}

// writeNotes writes one note per step: what tests across the repository
// rely on (the files, the events, the summary's wording).
func (a *Agent) writeNotes(ctx context.Context, run *drydock.AgentRun, sc script, done int) (*drydock.AgentOutcome, error) {
	ws := a.Dial(run.Sandbox)
	usage := run.Job.Usage
	for step := done + 1; step <= sc.steps; step++ {
		if err := sleep(ctx, sc.delay); err != nil {
			return nil, err
		}
		if err := hold(ctx, run); err != nil {
			return nil, err
		}
		callID := fmt.Sprintf("call_%d", step)
		path := fmt.Sprintf("notes/step-%03d.md", step)
		body := fmt.Sprintf("# Step %d\n\nTask: %s\n", step, firstLine(run.Job.Task))
		run.Events.Emit(ctx, drydock.EventModel, drydock.ModelEvent{Step: step, Text: fmt.Sprintf("Step %d: I will write %s.", step, path)})
		input, _ := json.Marshal(map[string]string{"command": "create", "path": path, "file_text": body})
		run.Events.Emit(ctx, drydock.EventToolCall, drydock.ToolCallEvent{Step: step, ID: callID, Name: "str_replace_based_edit_tool", Input: input})
		obs := drydock.ObservationEvent{Step: step, ID: callID, Name: "str_replace_based_edit_tool", Output: "File created successfully at: " + path}
		if err := ws.WriteFile(ctx, path, []byte(body)); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			obs.Output, obs.IsError = "Error: "+err.Error(), true
		}
		run.Events.Emit(ctx, drydock.EventObservation, obs)
		stepUsage := drydock.Usage{InputTokens: int64(200 + 50*step), OutputTokens: int64(len(body) / 4)}
		usage = usage.Add(stepUsage)
		run.Events.Emit(ctx, drydock.EventUsage, drydock.UsageEvent{Usage: stepUsage, Step: step})
		if err := run.Progress(ctx, step, usage); err != nil {
			return nil, fmt.Errorf("report progress: %w", err)
		}
	}
	if sc.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if sc.fail != "" {
		return nil, drydock.Errorf(drydock.EINVALID, "%s", sc.fail)
	}
	summary := fmt.Sprintf("Completed %d scripted steps; notes are in notes/ and SUMMARY.md.", sc.steps)
	if err := ws.WriteFile(ctx, "SUMMARY.md", []byte(summary+"\n")); err != nil {
		return nil, fmt.Errorf("write summary: %w", err)
	}
	return &drydock.AgentOutcome{Summary: summary}, nil
}

// hold waits while the job is paused, as the LLM agent does
// before each step, so that a demo job pauses too.
func hold(ctx context.Context, run *drydock.AgentRun) error {
	if run.Hold == nil {
		return nil
	}
	_, err := run.Hold(ctx)
	return err
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
