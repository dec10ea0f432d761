package transcript

import (
	"context"
	"fmt"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/tokens"
)

// DefaultKeepObservations is how many of the latest tool results keep
// their whole output when a Config sets none.
const DefaultKeepObservations = 20

// Config configures a Window.
type Config struct {
	// Task is the first user message; System and Tools are the rest of
	// the request's fixed part, counted against the budget.
	Task   string
	System string
	Tools  []llm.Tool
	// Model is asked for the summaries.
	Model string
	// Meter counts tokens and holds the run's calibration.
	Meter *tokens.Meter
	// Budget is the largest prompt a request may carry, in tokens as the
	// provider counts them.
	Budget int
	// KeepObservations is how many of the latest tool results keep their
	// output (default DefaultKeepObservations); older ones are masked, in
	// chunks, so that the prompt's prefix changes rarely.
	KeepObservations int
	// KeepImages is how many of the latest results with images show them.
	KeepImages int
	// Image returns the picture a reference names, when it is at hand.
	Image func(ImageRef) (llm.Image, bool)

	// Events returns the job's log as it is now; Emit appends to it (the
	// next Events call includes the event).
	Events func() []*drydock.Event
	Emit   func(ctx context.Context, typ drydock.EventType, v any) error
	// Complete asks the model for a summary.
	Complete func(ctx context.Context, req *llm.Request) (*llm.Response, error)
}

// Window builds each prompt of a run from the job's log under a token
// budget. The layers, cheapest first:
//
//  1. long tool outputs are cut when they are recorded (by the agent,
//     within ObservationBytes; the whole output stays in a file);
//  2. outputs beyond the latest KeepObservations are masked: a note of
//     what they were replaces them (KindMask log events), and images
//     beyond the latest KeepImages are named instead of shown;
//  3. when the prompt would still exceed the budget, the model summarizes
//     the oldest steps together with the previous summary (condensation
//     events; in chunks when they do not fit one request), keeping the
//     task, the summary and the latest steps;
//  4. if that is still too much, a reset keeps only the task, the summary
//     (cut) and the last step, and the last step's texts are cut to fit.
//
// Everything it decides is an event of the log, which it reads back, so a
// resumed run (and a replay) builds the same prompts. The summary sits in
// the first user message, which changes only at a condensation, and
// masking moves in chunks: between those the prompt only grows at its end,
// which is what prompt caches reuse.
type Window struct {
	cfg   Config
	log   log
	fixed int // system prompt and tools, counted
	task  int // the task message alone, counted
	limit int // the budget less a margin for counting errors
	// shown is the step through which the last prompt returned masked
	// the outputs (-1 before the first): a summary request continues
	// that prompt, whose prefix the provider has cached.
	shown int
	memo  struct {
		text string
		n    int
	}
}

// NewWindow returns a Window for one run.
func NewWindow(cfg Config) *Window {
	if cfg.KeepObservations <= 0 {
		cfg.KeepObservations = DefaultKeepObservations
	}
	if cfg.Meter == nil {
		cfg.Meter = tokens.NewMeter(tokens.Estimate{})
	}
	if cfg.Budget <= 0 {
		cfg.Budget = tokens.DefaultWindow
	}
	w := &Window{cfg: cfg, shown: -1}
	w.fixed = tokens.Request(cfg.Meter, &llm.Request{System: cfg.System, Tools: cfg.Tools})
	w.task = tokens.Message(cfg.Meter, llm.Message{Text: cfg.Task})
	w.limit = cfg.Budget - max(cfg.Budget/20, 100)
	return w
}

// Prompt is one request's conversation.
type Prompt struct {
	Messages []llm.Message
	// Counted is the request's size as counted (system and tools
	// included), before calibration: what Meter.Observe wants back.
	Counted int
	// Estimate is Counted calibrated: the size the provider should report.
	Estimate int
}

// Budget is the budget the window keeps to.
func (w *Window) Budget() int { return w.cfg.Budget }

// ObservationBytes is the most one tool result should hold when it is
// recorded: about a quarter of the room the fixed part of the prompt
// leaves, so that a few recent results always fit.
func (w *Window) ObservationBytes() int {
	room := w.limit - w.fixed - w.task
	return max(room/4*3, 2000)
}

// Prompt returns the conversation of the next request, within the budget
// if at all possible (the system prompt and tools alone may not fit, and
// are sent anyway). Masking, summaries and cuts it needs are recorded
// first. Only ctx ending or the log refusing an event is an error: a
// failed summary becomes a digest of the steps.
func (w *Window) Prompt(ctx context.Context) (*Prompt, error) {
	w.sync()
	before := w.estimate(w.log.maskThrough)
	if through, ok := w.maskDue(w.cfg.KeepObservations, max(w.cfg.KeepObservations/2, 1)); ok {
		if err := w.mask(ctx, through, before); err != nil {
			return nil, err
		}
	}
	if w.estimate(w.log.maskThrough) <= w.limit {
		return w.view(ctx)
	}
	// Over the budget. Masking all but a few results is cheap; it does if
	// it leaves room to grow.
	floor := max(w.cfg.KeepObservations/4, 1)
	if through, ok := w.maskDue(floor, 0); ok && w.estimate(through) <= w.target() {
		if err := w.mask(ctx, through, w.estimate(w.log.maskThrough)); err != nil {
			return nil, err
		}
		return w.view(ctx)
	}
	if err := w.condense(ctx); err != nil {
		return nil, err
	}
	if w.estimate(w.log.maskThrough) > w.limit {
		if err := w.reset(ctx); err != nil {
			return nil, err
		}
	}
	return w.view(ctx)
}

// sync reads what the log gained.
func (w *Window) sync() { w.log.read(w.cfg.Events()) }

// taskText is the first user message: the task, notices given before the
// first step, and the latest summary.
func (w *Window) taskText() string {
	text := joinAll(w.cfg.Task, w.log.head)
	if c := w.log.latest; c != nil {
		text = join(text, fmt.Sprintf("# Progress so far\nThe conversation of steps 1 to %d was condensed into this summary to fit your context window (the recall tool searches their full record):\n\n%s", c.ThroughStep, c.Summary))
	}
	return text
}

func (w *Window) taskTokens() int {
	t := w.taskText()
	if w.memo.text != t || w.memo.n == 0 {
		w.memo.text, w.memo.n = t, tokens.Message(w.cfg.Meter, llm.Message{Text: t})
	}
	return w.memo.n
}

// unitTokens counts a unit as rendered, images aside.
func (w *Window) unitTokens(u *unit, masked bool) int {
	k := 0
	if masked {
		k = 1
	}
	if u.memo[k] == 0 {
		a, m := u.messages(render{masked: masked}, nil)
		u.memo[k] = tokens.Message(w.cfg.Meter, a) + tokens.Message(w.cfg.Meter, m)
	}
	return u.memo[k]
}

// count is the raw size of the prompt with the live units, masked through
// a step.
func (w *Window) count(masked int) int {
	live := w.log.live()
	n := w.fixed + w.taskTokens()
	for _, u := range live {
		n += w.unitTokens(u, u.step <= masked)
	}
	if w.cfg.Image != nil {
		n += tokens.ImageTokens * len(imageKeepers(live, w.cfg.KeepImages, masked))
	}
	return n
}

func (w *Window) estimate(masked int) int { return w.cfg.Meter.Scale(w.count(masked)) }

// summaryMax is the most tokens a summary may take: a quarter of the room
// the fixed part leaves, within [256, 4000].
func (w *Window) summaryMax() int {
	room := w.limit - w.cfg.Meter.Scale(w.fixed+w.task)
	return min(max(room/4, 256), 4000)
}

// target is the size a prompt is brought down to when it overflows: the
// fixed part, a full-sized summary, and half of the room left for steps,
// so that the next overflow is many steps away.
func (w *Window) target() int {
	base := w.cfg.Meter.Scale(w.fixed + w.task)
	base += w.summaryMax()
	return base + max(w.limit-base, 0)/2
}

// maskDue returns the step through which to mask so that keep results stay
// whole, when more than keep+slack are whole now and masking saves enough
// to be worth changing the prompt's middle.
func (w *Window) maskDue(keep, slack int) (int, bool) {
	live := w.log.live()
	whole, through := 0, 0
	for i := len(live) - 1; i >= 0; i-- {
		u := live[i]
		if u.step <= w.log.maskThrough {
			break
		}
		if whole >= keep && through == 0 {
			through = u.step
		}
		whole += len(u.calls)
	}
	if whole <= keep+slack || through <= w.log.maskThrough {
		return 0, false
	}
	saved := 0
	for _, u := range live {
		if u.step > w.log.maskThrough && u.step <= through {
			saved += w.unitTokens(u, false) - w.unitTokens(u, true)
		}
	}
	return through, saved >= min(500, w.limit/50)
}

func (w *Window) mask(ctx context.Context, through, before int) error {
	from := max(w.log.maskThrough, w.log.cutStep()) + 1
	after := w.estimate(through)
	err := w.cfg.Emit(ctx, drydock.EventLog, ContextNote{Level: "info", Kind: KindMask, ThroughStep: through,
		Message:      fmt.Sprintf("Context: the outputs of steps %d to %d are now hidden from the model's prompt (about %d tokens to %d of a %d budget); they stay in the log and recall finds them.", from, through, before, after, w.cfg.Budget),
		TokensBefore: before, TokensAfter: after, Budget: w.cfg.Budget})
	w.sync()
	return err
}

// view renders the prompt, cutting the texts of the live steps (in
// practice the last one, after a reset) and at last the first message
// when even that does not fit.
func (w *Window) view(ctx context.Context) (*Prompt, error) {
	live := w.log.live()
	masked := w.log.maskThrough
	w.shown = masked
	p := w.render(live, masked, 0, 0)
	if p.Estimate <= w.limit {
		return p, nil
	}
	longest := 0
	for _, u := range live {
		longest = max(longest, u.longest())
	}
	// The largest cut of the steps' texts that fits; then, if none does,
	// the largest cut of the first message too.
	clip := search(200, longest, func(n int) bool { return w.render(live, masked, n, 0).Estimate <= w.limit })
	taskClip := 0
	if clip == 0 {
		clip = 200
		taskClip = search(500, len(w.taskText()), func(n int) bool { return w.render(live, masked, clip, n).Estimate <= w.limit })
		if taskClip == 0 {
			taskClip = 500
		}
	}
	before := p.Estimate
	p = w.render(live, masked, clip, taskClip)
	if n := len(live); n > 0 && !w.log.cutNotes[live[n-1].step] {
		step := live[n-1].step
		err := w.cfg.Emit(ctx, drydock.EventLog, ContextNote{Level: "warn", Kind: KindCut, Step: step,
			Message:      fmt.Sprintf("Context: step %d alone does not fit the model's prompt; its texts are cut to about %d bytes each (about %d tokens to %d of a %d budget). The log keeps them whole.", step, clip, before, p.Estimate, w.cfg.Budget),
			TokensBefore: before, TokensAfter: p.Estimate, Budget: w.cfg.Budget})
		w.sync()
		if err != nil {
			return nil, err
		}
	}
	return p, nil
}

// render builds the conversation; clip and taskClip, when positive, cut
// the steps' texts and the first message.
func (w *Window) render(live []*unit, masked, clip, taskClip int) *Prompt {
	task := w.taskText()
	if taskClip > 0 {
		task = clipText(task, taskClip)
	}
	msgs := make([]llm.Message, 1, 1+2*len(live))
	msgs[0] = llm.Message{Role: llm.RoleUser, Text: task}
	show := map[*Observation]bool{}
	if w.cfg.Image != nil {
		show = imageKeepers(live, w.cfg.KeepImages, masked)
	}
	for _, u := range live {
		a, m := u.messages(render{masked: u.step <= masked, show: show, clip: clip}, w.cfg.Image)
		msgs = append(msgs, a, m)
	}
	// Uncut, the memoized count: a long prompt is not tokenized again.
	n := w.count(masked)
	if clip > 0 || taskClip > 0 {
		n = w.fixed + tokens.Messages(w.cfg.Meter, msgs)
	}
	return &Prompt{Messages: msgs, Counted: n, Estimate: w.cfg.Meter.Scale(n)}
}

// longest is the length of the unit's longest text.
func (u *unit) longest() int {
	n := len(u.text)
	for _, c := range u.calls {
		n = max(n, len(c.Input))
	}
	for _, r := range u.results {
		if r != nil {
			n = max(n, len(r.Output))
		}
	}
	for _, s := range u.notes {
		n = max(n, len(s))
	}
	return n
}

// search returns the largest n in [lo, hi] for which ok holds, assuming ok
// holds for every n below one where it does; 0 when it holds for none.
func search(lo, hi int, ok func(int) bool) int {
	if hi < lo || !ok(lo) {
		return 0
	}
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}
