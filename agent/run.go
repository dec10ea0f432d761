package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/memory"
	"github.com/drydockhq/drydock/agent/tools"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/tokens"
	"github.com/drydockhq/drydock/toolbox"
)

// Where the agent keeps files in the workspace.
const (
	outputsDir     = ".drydock/outputs"
	screenshotsDir = ".drydock/screenshots"
)

// recallHits is how many passages a recall returns at most.
const recallHits = 5

// bashNotes is room for the notes bash adds to a cut output (exit code,
// where the whole output is).
const bashNotes = 400

// run is one run of one job.
type run struct {
	a      *Agent
	ar     *drydock.AgentRun
	log    *slog.Logger
	mask   *masker
	box    *toolbox.Client
	tools  *tools.Set
	model  string
	images bool
	system string
	// maxSteps is the job's step budget.
	maxSteps int

	// events is the job's log as far as this run knows it: the history it
	// was given and everything it appended since, after the ancestors'
	// conversation of a follow-up (its first prior events; prior.go).
	events []*drydock.Event
	prior  int
	// priorSteps is the ancestors' last step number: this job's steps
	// are numbered on from it.
	priorSteps int
	// history is what recall searches.
	history *memory.History
	// window builds each prompt within the context budget; meter counts
	// its tokens, calibrated by the usage the provider reports.
	window *transcript.Window
	meter  *tokens.Meter
	// imgs holds the images of observations, by workspace path.
	imgs map[string]llm.Image
	ids  map[string]bool // tool call ids used so far
	// heldReasoning is the latest turn's reasoning when masking kept it
	// out of the log (thinking.go).
	heldReasoning heldReasoning
	steps         int
	usage         drydock.Usage
	stuck         stuck
	// outcome is set once finish succeeded.
	outcome *drydock.AgentOutcome
	// inboxAfter is the newest seq looked at for messages; inbox holds
	// the messages found and not yet delivered (agent/inbox.go).
	inboxAfter int64
	inbox      []*drydock.Event
	// held is what pauses the next prompt has to tell of (hold.go).
	held *drydock.PauseSummary
}

// usageEvent is the data of an EventUsage event: the step's usage and
// cost, flattened as drydock.Usage plus where it came from.
type usageEvent = drydock.UsageEvent

func (a *Agent) start(ctx context.Context, ar *drydock.AgentRun) (*run, error) {
	model := a.Model(ar.Job)
	budget, err := a.contextBudget(ar.Job, model)
	if err != nil {
		return nil, err
	}
	start := fromPrior(ar)
	r := &run{
		a:        a,
		ar:       ar,
		log:      a.log.With("job_id", ar.Job.ID, "model", model),
		mask:     a.mask.with(append([]string{ar.Sandbox.Token, ar.Sandbox.VNCPassword}, ar.Job.Secrets.Values()...)...),
		box:      a.cfg.Dial(ar.Sandbox),
		model:    model,
		images:   a.acceptsImages(model),
		maxSteps: ar.Job.MaxSteps,
		events:   append(start.events, ar.History...),
		imgs:     map[string]llm.Image{},
		ids:      map[string]bool{},
		stuck:    stuck{limit: a.cfg.StuckLimit},
	}
	r.prior, r.priorSteps = len(start.events), start.steps
	r.history = memory.NewHistory(r.box, outputsDir)
	if r.maxSteps <= 0 {
		r.maxSteps = a.cfg.MaxSteps
	}
	info, err := r.box.Info(ctx)
	if err != nil {
		r.box.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w", drydock.Errorf(drydock.EUNAVAILABLE, "the sandbox's toolbox does not answer: %s", drydock.ErrorMessage(err)), err)
	}
	desktop := info.Desktop || ar.Sandbox.Profile == drydock.ProfileDesktop || ar.Job.Profile == drydock.ProfileDesktop
	resumed := r.resume()
	r.initInbox()
	toolEnv := tools.Env{
		Box:             r.box,
		Workspace:       info.Workspace,
		Desktop:         desktop,
		Resumed:         resumed || r.prior > 0, // a follow-up's edit history is its parent's, and gone
		Recall:          r.recall,
		BashTimeout:     a.cfg.BashTimeout,
		BashIdleTimeout: a.cfg.BashIdleTimeout,
		CodeTimeout:     a.cfg.CodeTimeout,
		Log:             r.log,
	}
	if ar.Job.Interactive && ar.Ask != nil {
		toolEnv.Ask = r.ask
	}
	r.tools = tools.New(toolEnv)
	r.system = systemPrompt(env{
		Workspace: info.Workspace,
		Desktop:   desktop,
		Code:      info.Code,
		Images:    r.images,
		MaxSteps:  r.maxSteps,
		Now:       a.cfg.Now(),
		Ask:       toolEnv.Ask != nil,
		// The tools' default when the config sets none.
		BashTimeout: a.cfg.BashTimeout,
	})
	r.meter = tokens.NewMeter(tokens.For(a.Provider(), model))
	r.calibrate()
	keepImages := a.cfg.KeepImages
	if !r.images {
		keepImages = 0
	}
	r.window = transcript.NewWindow(transcript.Config{
		Task:             taskMessage(start.task),
		System:           r.system,
		Tools:            r.tools.Defs(),
		Model:            model,
		Meter:            r.meter,
		Budget:           budget,
		KeepObservations: a.cfg.KeepObservations,
		KeepImages:       keepImages,
		Image: func(ref transcript.ImageRef) (llm.Image, bool) {
			img, ok := r.imgs[ref.Path]
			return img, ok
		},
		Events:   func() []*drydock.Event { return r.events },
		Emit:     r.emit,
		Complete: r.summarize,
	})
	// A small budget takes smaller observations: bash then cuts its output
	// (saving the whole of it) within the limit, rather than the agent
	// cutting a reply that is already cut. The tools' definitions do not
	// change.
	if limit := r.maxObservation() - bashNotes; limit < 30000 {
		toolEnv.MaxOutput = limit
		r.tools = tools.New(toolEnv)
	}
	r.log.Info("agent run", "provider", a.Provider(), "resumed", resumed, "steps_done", r.steps, "tools", r.tools.Names(), "context_budget", budget, "tokenizer", r.meter.Name())
	if _, known := llm.Cost(model, llm.Usage{}); !known && !resumed {
		r.emit(ctx, drydock.EventLog, drydock.LogEvent{Level: "warn",
			Message: fmt.Sprintf("no price is known for model %s: its cost is counted as 0", model)})
	}
	r.clearStaleQuestion(ctx)
	if resumed || r.prior > 0 {
		if err := r.settle(ctx); err != nil {
			r.box.Close()
			return nil, err
		}
	}
	return r, nil
}

func (r *run) close() { r.box.Close() }

// step is a model turn and the observations of its calls, from the log.
type step struct {
	turn transcript.ModelTurn
	obs  []transcript.Observation
}

// replay reads the agent's events of the job's own log in order.
func (r *run) replay() []step { return replay(r.events[r.prior:]) }

// replay reads the agent's events in order.
func replay(events []*drydock.Event) []step {
	var steps []step
	for _, e := range events {
		switch e.Type {
		case drydock.EventModel:
			var t transcript.ModelTurn
			if json.Unmarshal(e.Data, &t) == nil {
				steps = append(steps, step{turn: t})
			}
		case drydock.EventObservation:
			var o transcript.Observation
			if json.Unmarshal(e.Data, &o) == nil && len(steps) > 0 {
				s := &steps[len(steps)-1]
				s.obs = append(s.obs, o)
			}
		}
	}
	return steps
}

// resume rebuilds the run's state from the history and reports whether
// there was any: steps, usage, call ids, the stuck detector, and whether
// finish already succeeded. A follow-up's ancestors give only call ids
// (unique in the conversation) and the step numbers to go on from.
func (r *run) resume() bool {
	for _, s := range replay(r.events[:r.prior]) {
		for _, c := range s.turn.ToolCalls {
			r.ids[c.ID] = true
		}
	}
	r.steps = r.priorSteps
	steps := r.replay()
	for _, e := range r.events[r.prior:] {
		if e.Type == drydock.EventUsage {
			var u drydock.Usage
			if json.Unmarshal(e.Data, &u) == nil {
				r.usage = r.usage.Add(u)
			}
		}
	}
	for _, s := range steps {
		r.steps = max(r.steps+1, s.turn.Step)
		for _, c := range s.turn.ToolCalls {
			r.ids[c.ID] = true
		}
		for _, o := range s.obs {
			if o.Name == tools.NameFinish && !o.IsError && !o.Interrupted {
				r.outcome = &drydock.AgentOutcome{Summary: o.Summary}
			}
		}
		r.stuck.observe(s.turn, s.obs)
	}
	return len(steps) > 0
}

// settle finishes what a previous run left: calls of its last turn
// without an observation are answered as interrupted (running them again
// could repeat a side effect), and the images the prompt still shows are
// fetched back from the workspace.
func (r *run) settle(ctx context.Context) error {
	steps := r.replay()
	if n := len(steps); n > 0 && r.outcome == nil {
		last := steps[n-1]
		done := map[string]bool{}
		for _, o := range last.obs {
			done[o.ID] = true
		}
		for _, c := range last.turn.ToolCalls {
			if done[c.ID] {
				continue
			}
			o := transcript.Observation{Step: last.turn.Step, ID: c.ID, Name: c.Name, IsError: true, Interrupted: true,
				Output: "This tool call was interrupted by a restart of the orchestrator before it returned; its effect is unknown. Check the state before repeating it."}
			if err := r.emit(ctx, drydock.EventObservation, o); err != nil {
				return err
			}
		}
	}
	if !r.images {
		return nil
	}
	kept := 0
	for i := len(r.events) - 1; i >= 0 && kept < r.a.cfg.KeepImages; i-- {
		// Observations and notices (a screenshot after a take-over) name
		// their images alike.
		if t := r.events[i].Type; t != drydock.EventObservation && t != drydock.EventLog {
			continue
		}
		var o struct {
			Images []transcript.ImageRef `json:"images"`
		}
		if json.Unmarshal(r.events[i].Data, &o) != nil || len(o.Images) == 0 {
			continue
		}
		kept++
		for _, ref := range o.Images {
			data, err := r.box.ReadFile(ctx, ref.Path)
			if err != nil {
				r.log.Warn("image of an earlier step is gone", "path", ref.Path, "err", err)
				continue
			}
			r.imgs[ref.Path] = llm.Image{MediaType: ref.MediaType, Data: data}
		}
	}
	return ctx.Err()
}

// emit appends an event to the job's log, secrets masked, and to the
// run's own copy from which prompts are built.
func (r *run) emit(ctx context.Context, typ drydock.EventType, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", typ, err)
	}
	data = r.mask.JSON(data)
	if len(data) > drydock.MaxEventDataBytes {
		data = shrink(data, drydock.MaxEventDataBytes)
	}
	ev := &drydock.Event{JobID: r.ar.Job.ID, Type: typ, Time: r.a.cfg.Now(), Data: data}
	r.events = append(r.events, ev)
	if err := r.ar.Events.Emit(ctx, typ, json.RawMessage(data)); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("record %s event: %w", typ, err)
	}
	return nil
}

// notice tells the model something in its next prompt.
func (r *run) notice(ctx context.Context, level, msg string) error {
	return r.emit(ctx, drydock.EventLog, transcript.Notice{Level: level, Message: msg, Notice: true, Step: r.steps})
}

// fail records the reason a run ends and returns it as the run's error.
func (r *run) fail(ctx context.Context, err *drydock.Error) error {
	if eerr := r.emit(ctx, drydock.EventError, drydock.ErrorEvent{Message: err.Message}); eerr != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// recall answers the recall tool from the whole log and the saved
// outputs, in at most what one observation may hold.
func (r *run) recall(ctx context.Context, query string) (string, error) {
	return r.history.Recall(ctx, r.events, query, recallHits, r.maxObservation())
}

// keep stores what a tool returned beyond its text: images go to files in
// the workspace (the log only names them), and an output over the limit is
// saved whole and cut in the middle.
func (r *run) keep(ctx context.Context, step int, call llm.ToolCall, res tools.Result) transcript.Observation {
	o := transcript.Observation{Step: step, ID: call.ID, Name: call.Name, Output: res.Output, IsError: res.IsError}
	if res.Finish {
		o.Summary = res.Summary
	}
	if res.OutputPath != "" {
		o.OutputPath, o.Truncated = r.tools.Rel(res.OutputPath), true
	}
	if !utf8.ValidString(o.Output) {
		o.Output = strings.ToValidUTF8(o.Output, "\uFFFD")
	}
	for i, img := range res.Images {
		ext := strings.TrimPrefix(img.MediaType, "image/")
		p := path.Join(screenshotsDir, fmt.Sprintf("step-%04d-%s-%d.%s", step, safeName(call.ID), i+1, ext))
		if err := r.box.WriteFile(ctx, p, img.Data); err != nil {
			r.log.Warn("save image", "path", p, "err", err)
			o.Output += fmt.Sprintf("\n[an image could not be saved: %s]", drydock.ErrorMessage(err))
			continue
		}
		r.imgs[p] = img.Image
		o.Images = append(o.Images, transcript.ImageRef{Path: p, MediaType: img.MediaType, Width: img.Width, Height: img.Height})
		if !r.images {
			o.Output += fmt.Sprintf("\n[The image was saved to %s; this model is not shown images.]", p)
		}
	}
	if limit := r.maxObservation(); len(o.Output) > limit {
		p := path.Join(outputsDir, fmt.Sprintf("step-%04d-%s.txt", step, safeName(call.ID)))
		where := "the whole output is in " + p
		switch {
		case o.OutputPath != "":
			where = "the whole output is in " + o.OutputPath // the tool saved it
		case r.box.WriteFile(ctx, p, []byte(o.Output)) != nil:
			where = "the whole output could not be saved"
		default:
			o.OutputPath = p
		}
		o.Output = cut(o.Output, limit, fmt.Sprintf("\n[... %d bytes cut; %s ...]\n", len(o.Output), where))
		o.Truncated = true
	}
	return o
}

// maxObservation is the most one tool result may hold in the prompt.
func (r *run) maxObservation() int {
	return min(r.a.cfg.MaxObservationBytes, r.window.ObservationBytes())
}

// cut keeps the head and tail of s within about n bytes, marking the gap.
func cut(s string, n int, mark string) string {
	half := max((n-len(mark))/2, 0)
	head, tail := s[:half], s[len(s)-half:]
	return strings.ToValidUTF8(head, "") + mark + strings.ToValidUTF8(tail, "")
}

// shrink cuts every long string of a JSON document until it fits in n
// bytes; only a model turn or an output far over every other limit needs it.
func shrink(data []byte, n int) []byte {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return []byte(`{"error":"event too large"}`)
	}
	for limit := 64 << 10; limit >= 256; limit /= 4 {
		v = clipStrings(v, limit)
		if out, err := json.Marshal(v); err == nil && len(out) <= n {
			return out
		}
	}
	return []byte(`{"error":"event too large"}`)
}

func clipStrings(v any, limit int) any {
	switch x := v.(type) {
	case string:
		if len(x) > limit {
			return cut(x, limit, fmt.Sprintf("\n[... %d bytes cut from the log ...]\n", len(x)))
		}
	case []any:
		for i := range x {
			x[i] = clipStrings(x[i], limit)
		}
	case map[string]any:
		for k := range x {
			x[k] = clipStrings(x[k], limit)
		}
	}
	return v
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}
