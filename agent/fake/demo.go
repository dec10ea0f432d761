package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/tools"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/llm"
)

// model names the demo in its model events, so no one takes it for one.
const model = "drydock-demo (scripted, no model)"

// Where the demo keeps screenshots: where the LLM agent keeps them.
const screenshotsDir = ".drydock/screenshots"

// demo plays a scripted agent on the task: it builds a small project that
// matches the task's words with the LLM agent's own tools (editor, bash,
// and on a desktop the computer tool), runs its tests, shows it on the
// desktop, and finishes with a summary of what happened. Its events have
// the LLM agent's shapes, so the UI and the CLI show them the same way.
func (a *Agent) demo(ctx context.Context, run *drydock.AgentRun, sc script, done int) (*drydock.AgentOutcome, error) {
	box := a.Dial(run.Sandbox)
	info, err := box.Info(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w", drydock.Errorf(drydock.EUNAVAILABLE, "the sandbox's toolbox does not answer: %s", drydock.ErrorMessage(err)), err)
	}
	p := newProject(run.Job.Task, info.Desktop)
	steps, err := p.steps(info.Workspace)
	if err != nil {
		return nil, fmt.Errorf("plan the demo: %w", err)
	}
	set := tools.New(tools.Env{Box: box, Workspace: info.Workspace, Desktop: info.Desktop, Resumed: done > 0})
	finish := !sc.hang && sc.fail == ""
	if finish {
		steps = append(steps, step{say: "Done. Here is what I did.", tool: tools.NameFinish})
	}
	// What earlier steps returned, from this run or (resumed) the log.
	results := map[int]transcript.Observation{}
	for _, e := range run.History {
		var o transcript.Observation
		if e.Type == drydock.EventObservation && json.Unmarshal(e.Data, &o) == nil {
			results[o.Step] = o
		}
	}
	usage := run.Job.Usage
	for i := done; i < len(steps); i++ {
		if err := sleep(ctx, sc.delay); err != nil {
			return nil, err
		}
		if err := hold(ctx, run); err != nil {
			return nil, err
		}
		n, st := i+1, steps[i]
		if st.tool == tools.NameFinish {
			st.input = map[string]any{"summary": p.summary(steps, results)}
		}
		input, err := json.Marshal(st.input)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", n, err)
		}
		call := llm.ToolCall{ID: fmt.Sprintf("call_%d", n), Name: st.tool, Input: input}
		turn := transcript.ModelTurn{Step: n, Model: model, Text: st.say, ToolCalls: []llm.ToolCall{call}, StopReason: string(llm.StopToolUse)}
		if err := run.Events.Emit(ctx, drydock.EventModel, turn); err != nil {
			return nil, err
		}
		u := drydock.Usage{InputTokens: int64(300 + 120*n), OutputTokens: int64(20 + len(input)/4)}
		usage = usage.Add(u)
		if err := run.Events.Emit(ctx, drydock.EventUsage, u); err != nil {
			return nil, err
		}
		if err := run.Events.Emit(ctx, drydock.EventToolCall, transcript.ToolCall{Step: n, ID: call.ID, Name: call.Name, Input: call.Input}); err != nil {
			return nil, err
		}
		res := set.Run(ctx, call)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		o := keep(ctx, box, set, n, call, res)
		results[n] = o
		if err := run.Events.Emit(ctx, drydock.EventObservation, o); err != nil {
			return nil, err
		}
		if err := run.Progress(ctx, n, usage); err != nil {
			return nil, fmt.Errorf("report progress: %w", err)
		}
		if res.Finish {
			return &drydock.AgentOutcome{Summary: res.Summary}, nil
		}
	}
	if sc.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if sc.fail != "" {
		return nil, drydock.Errorf(drydock.EINVALID, "%s", sc.fail)
	}
	// A resumed run whose finish step was recorded: the summary is in it.
	if o, ok := results[len(steps)]; ok && o.Summary != "" {
		return &drydock.AgentOutcome{Summary: o.Summary}, nil
	}
	return &drydock.AgentOutcome{Summary: p.summary(steps, results)}, nil
}

// keep turns a tool's result into the observation the log holds, as the
// LLM agent does: images go to files in the workspace, which the
// observation names.
func keep(ctx context.Context, box tools.Box, set *tools.Set, n int, call llm.ToolCall, res tools.Result) transcript.Observation {
	o := transcript.Observation{Step: n, ID: call.ID, Name: call.Name, Output: strings.ToValidUTF8(res.Output, "\uFFFD"), IsError: res.IsError, Summary: res.Summary}
	if res.OutputPath != "" {
		o.OutputPath, o.Truncated = set.Rel(res.OutputPath), true
	}
	for i, img := range res.Images {
		p := path.Join(screenshotsDir, fmt.Sprintf("step-%04d-%s-%d.%s", n, call.ID, i+1, strings.TrimPrefix(img.MediaType, "image/")))
		if err := box.WriteFile(ctx, p, img.Data); err != nil {
			o.Output += fmt.Sprintf("\n[the image could not be saved: %s]", drydock.ErrorMessage(err))
			continue
		}
		o.Images = append(o.Images, transcript.ImageRef{Path: p, MediaType: img.MediaType, Width: img.Width, Height: img.Height})
		o.Output += "\n[The screenshot is in " + p + ".]"
	}
	return o
}

// summary says what the demo did and how it went: which files it wrote,
// whether the tests passed, what the desktop showed.
func (p *project) summary(steps []step, results map[int]transcript.Observation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "I wrote a %s for the task in %s/: %s.", p.KindText, p.Name, strings.Join(p.Files, ", "))
	var failed []string
	for i, st := range steps {
		o, ok := results[i+1]
		switch {
		case !ok:
		case st.tests && testsPassed(o):
			fmt.Fprintf(&b, " Its tests ran in the sandbox (`%s`) and pass.", p.testCommand())
		case st.tests:
			fmt.Fprintf(&b, " Its tests ran in the sandbox (`%s`) and did not pass: see step %d.", p.testCommand(), i+1)
		case o.IsError:
			failed = append(failed, fmt.Sprintf("%d (%s)", i+1, st.tool))
		case len(o.Images) > 0:
			fmt.Fprintf(&b, " The desktop shows it; the screenshot is %s.", o.Images[0].Path)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(&b, " Steps that failed: %s.", strings.Join(failed, ", "))
	}
	switch p.Kind {
	case kindReact:
		b.WriteString(" To run the app: `npm install && npm run dev` (npm install needs the job's egress to allow the npm registry).")
	case kindNode:
		b.WriteString(" To run it: `npm start`.")
	case kindPyGUI:
		b.WriteString(" To run it: `python3 app.py`.")
	default:
		fmt.Fprintf(&b, " To use it: `python3 %s.py add \"...\"`.", p.Noun)
	}
	b.WriteString(" This was Drydock's scripted demo agent (--agent fake): no model was used; README.md says more.")
	return b.String()
}

// testsPassed reads a bash observation: bash marks a failed command with
// its exit code or a timeout.
func testsPassed(o transcript.Observation) bool {
	return !o.IsError && !strings.Contains(o.Output, "[exit code ") && !strings.Contains(o.Output, "[The command")
}
