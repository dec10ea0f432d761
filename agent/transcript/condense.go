package transcript

import (
	"context"
	"fmt"
	"strings"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/tokens"
)

// How much of a step the summarizer sees: enough for the facts; the rest
// stays searchable with recall.
const (
	summaryInputBytes  = 1000
	summaryOutputBytes = 2000
	// A summary request made in the conversation repeats the outputs the
	// conversation masks, uncached, so it shows only their head and tail
	// (the mask note names their size; recall finds the rest).
	hiddenOutputBytes = 500
)

const summarySystem = `You keep the working memory of an autonomous software agent. Its conversation has grown too long for its context window, so its oldest steps are replaced by your summary. The agent continues the task from your summary and the steps after it. It can search the full record of the old steps with its recall tool, but only when it knows what to look for, so name things precisely.`

// condense folds the oldest live steps into the summary, keeping the
// latest ones that fill half of the room the fixed part and a summary
// leave (at least the last step). Steps that do not fit one summary
// request are folded in several, each recorded as it is done.
func (w *Window) condense(ctx context.Context) error {
	live := w.log.live()
	if len(live) < 2 {
		return nil
	}
	base := w.cfg.Meter.Scale(w.fixed+w.task) + w.summaryMax()
	room := max(w.limit-base, 0) / 2
	keep := len(live) - 1
	used := w.cfg.Meter.Scale(w.unitTokens(live[keep], false))
	for i := keep - 1; i >= 0; i-- {
		n := w.cfg.Meter.Scale(w.unitTokens(live[i], live[i].step <= w.log.maskThrough))
		if used+n > room {
			break
		}
		used += n
		keep = i
	}
	if keep == 0 {
		return nil // the whole tail fits; nothing to fold
	}
	drop := live[:keep]
	for len(drop) > 0 {
		before := w.estimate(w.log.maskThrough)
		n, err := w.fold(ctx, drop, before)
		if err != nil {
			return err
		}
		drop = drop[n:]
	}
	return nil
}

// summaryKeep is what a summary must keep, for both kinds of summary
// request.
const summaryKeep = `Keep what the agent needs to carry on:
- the state of the task: what is done, what is in progress, what is left;
- files created or changed (paths) and what they hold; commands that build, test or run the work;
- decisions and their reasons; approaches that failed and why;
- errors still open; exact values it will need later (names, numbers, versions, paths, ids).
Leave out what no longer matters. At most about %d words, plain text with short sections or bullets. Write only the summary.`

// fold summarizes the previous summary and as many of units as fit one
// request, records the condensation, and returns how many units it took.
// The request continues the agent's own conversation when it fits the
// budget, so that the provider's prompt cache serves its prefix; else it
// is a prompt of its own.
func (w *Window) fold(ctx context.Context, units []*unit, before int) (int, error) {
	prev := w.log.latest
	apart, tookApart := w.apart(units)
	req, took := w.inConversation(units, len(tookApart))
	var resp *llm.Response
	var err error
	if req != nil {
		resp, err = w.cfg.Complete(ctx, req)
		// A provider that cannot forbid tool calls without losing the
		// cache leaves them to the model; a reply that makes one is no
		// summary, and a prompt without tools gets one.
		if err == nil && len(resp.ToolCalls) > 0 {
			req = nil
		}
	}
	if req == nil {
		took = tookApart
		resp, err = w.cfg.Complete(ctx, apart)
	}
	from, through := took[0].step, took[len(took)-1].step
	c := Condensation{Kind: KindSummary, FromStep: from, ThroughStep: through, Budget: w.cfg.Budget, Model: w.cfg.Model, TokensBefore: before}
	if prev != nil {
		c.Depth = prev.Depth + 1
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return 0, ctx.Err()
	case err != nil:
		c.Kind, c.Error = KindDigest, drydock.ErrorMessage(err)
	case strings.TrimSpace(resp.Text) == "":
		c.Kind, c.Error, c.Usage = KindDigest, "the model answered with no summary", drydock.TokenUsage(resp.Usage)
	default:
		c.Summary, c.Usage = strings.TrimSpace(resp.Text), drydock.TokenUsage(resp.Usage)
		c.Truncated = resp.StopReason == llm.StopMaxTokens
	}
	if c.Kind == KindDigest {
		c.Summary = digest(prev, took, c.Error)
	}
	if s := w.clipTokens(c.Summary, w.summaryMax()); s != c.Summary {
		c.Summary, c.Truncated = s, true
	}
	c.TokensAfter = w.estimateAfter(&c)
	if err := w.cfg.Emit(ctx, drydock.EventCondensation, c); err != nil {
		return 0, err
	}
	w.sync()
	return len(took), nil
}

// inConversation builds the summary request as the agent's conversation
// (system prompt, tools, the first message with the task and the previous
// summary, the live steps as the last prompts showed them) cut after the
// steps to fold, followed by a user turn asking for the summary: its
// prefix is one the last requests sent, which the provider has cached.
// The outputs masking hides from the conversation are given in that turn,
// cut. It returns nil when fewer than need of units fit the budget that
// way, or units do not start the live steps.
func (w *Window) inConversation(units []*unit, need int) (*llm.Request, []*unit) {
	live := w.log.live()
	if len(units) == 0 || len(live) < 2 || live[0] != units[0] {
		return nil, nil
	}
	// The masking of the last prompt, when this call masked more: the
	// prefix must be the one the provider cached.
	masked := w.log.maskThrough
	if w.shown >= 0 {
		masked = min(masked, w.shown)
	}
	var show map[*Observation]bool
	if w.cfg.Image != nil {
		show = imageKeepers(live, w.cfg.KeepImages, masked)
	}
	// prefix[k] is the size of the conversation with the first k steps.
	prefix := make([]int, len(live)+1)
	prefix[0] = w.fixed + w.taskTokens()
	for i, u := range live {
		prefix[i+1] = prefix[i] + w.unitTokens(u, u.step <= masked)
		for _, r := range u.pictured() {
			if show[r] {
				prefix[i+1] += tokens.ImageTokens
			}
		}
	}
	// hidden[i] is what the turn adds for units[i]: the outputs the
	// conversation masks, cut to hiddenOutputBytes, or shorter when that
	// lets the request take as many steps as a prompt of their own.
	hidden := make([]string, len(units))
	extra := make([]int, len(units)+1)
	base := w.cfg.Meter.Count(w.summaryTurn(units[:1], nil)) + 8
	fits := func(k, t int) bool { return w.cfg.Meter.Scale(prefix[k]+base+extra[t]) <= w.limit-50 }
	t := 0
	for _, n := range []int{hiddenOutputBytes, hiddenOutputBytes / 2} {
		for i, u := range units {
			extra[i+1] = extra[i]
			if u.step <= masked {
				if hidden[i] = u.hiddenOutputs(n); hidden[i] != "" {
					extra[i+1] += w.cfg.Meter.Count(hidden[i]) + 2
				}
			}
		}
		// The most steps one request folds, and no fewer than a prompt
		// of their own would (more requests would be more condensations,
		// the later ones with a new first message, so uncached).
		t = min(len(units), len(live)-1)
		for t >= need && !fits(t, t) {
			t--
		}
		if t >= max(need, 1) {
			break
		}
	}
	if t < max(need, 1) {
		return nil, nil
	}
	// Then the longest prefix up to the last request's whole conversation,
	// which holds all but the newest step: the cache holds the prefixes of
	// the latest requests.
	k := len(live) - 1
	for !fits(k, t) {
		k--
	}
	turn := w.summaryTurn(units[:t], hidden[:t])
	msgs := w.render(live, masked, 0, 0).Messages[:1+2*k]
	msgs = append(msgs[:len(msgs):len(msgs)], llm.Message{Role: llm.RoleUser, Text: turn})
	return &llm.Request{
		Model:       w.cfg.Model,
		System:      w.cfg.System,
		Tools:       w.cfg.Tools,
		Messages:    msgs,
		MaxTokens:   w.summaryMax() + 256,
		NoToolCalls: true,
	}, units[:t]
}

// summaryTurn is the last user message of a summary request made in the
// conversation: units are the steps to fold, hidden the texts of those
// whose outputs the conversation masks (empty for the others).
func (w *Window) summaryTurn(units []*unit, hidden []string) string {
	from, through := 0, 0
	if len(units) > 0 {
		from, through = units[0].step, units[len(units)-1].step
	}
	prevText := "There is no summary yet: these are the first steps."
	if prev := w.log.latest; prev != nil {
		prevText = fmt.Sprintf("Your summary of steps 1 to %d so far is the \"Progress so far\" part of the first message.", prev.ThroughStep)
	}
	var shown []string
	for _, h := range hidden {
		if h != "" {
			shown = append(shown, h)
		}
	}
	steps := "(All of their outputs are shown above.)"
	if len(shown) > 0 {
		steps = "The outputs hidden above, as recorded (long texts cut):\n" + strings.Join(shown, "\n\n")
	}
	return fmt.Sprintf(`Context condensation, not a step of the task: do not call any tool, answer with text only.

Your conversation has grown too long for your context window, so its oldest steps will be replaced by a summary. You will continue the task from the summary and the steps after it, and can search the full record of the old steps with the recall tool, but only when you know what to look for, so name things precisely.

%s

The steps to fold in are steps %d to %d of the conversation above.
<steps from="%d" to="%d">
%s
</steps>

Write your updated memory of steps 1 to %d: one summary that folds these steps into the previous summary. `+summaryKeep, prevText, from, through, from, through, steps, through, w.summaryMax()*3/4)
}

// apart builds the summary request as a prompt of its own, with the task,
// the previous summary and the steps rendered for the summarizer.
func (w *Window) apart(units []*unit) (*llm.Request, []*unit) {
	prev := w.log.latest
	limitWords := w.summaryMax() * 3 / 4
	frame := func(task, steps string, from, through int) string {
		prevText := "There is no summary yet: these are the first steps."
		if prev != nil {
			prevText = fmt.Sprintf("Your summary of steps 1 to %d so far:\n<summary>\n%s\n</summary>", prev.ThroughStep, prev.Summary)
		}
		return fmt.Sprintf(`The agent's task:
<task>
%s
</task>

%s

The steps to fold in, as the agent saw them (long texts cut):
<steps from="%d" to="%d">
%s
</steps>

Write the agent's updated memory of steps 1 to %d: one summary that folds these steps into the previous summary. `+summaryKeep, task, prevText, from, through, steps, through, limitWords)
	}
	// The room for steps: the budget less the frame with a short task.
	task := w.cfg.Task
	fixed := tokens.Request(w.cfg.Meter, &llm.Request{System: summarySystem, Messages: []llm.Message{{Role: llm.RoleUser, Text: frame("", "", 0, 0)}}})
	room := w.limit - w.cfg.Meter.Scale(fixed) - 50
	if w.cfg.Meter.Scale(w.task) > room/4 {
		task = w.clipTokens(task, room/4)
	}
	room -= w.cfg.Meter.Scale(w.cfg.Meter.Count(task))
	var texts []string
	used := 0
	for _, u := range units {
		t := u.text4summary()
		n := w.cfg.Meter.Scale(w.cfg.Meter.Count(t) + 2)
		if len(texts) == 0 && n > room {
			t, n = w.clipTokens(t, room), room
		}
		if len(texts) > 0 && used+n > room {
			break
		}
		texts = append(texts, t)
		used += n
	}
	took := units[:len(texts)]
	from, through := took[0].step, took[len(took)-1].step
	return &llm.Request{
		Model:     w.cfg.Model,
		System:    summarySystem,
		Messages:  []llm.Message{{Role: llm.RoleUser, Text: frame(task, strings.Join(texts, "\n\n"), from, through)}},
		MaxTokens: w.summaryMax() + 256,
	}, took
}

// reset drops every live step but the last without asking the model: the
// summary (cut to half its share) stays, with a note of what was dropped.
// It runs once, after condensing, when the prompt still does not fit, so
// it cannot loop.
func (w *Window) reset(ctx context.Context) error {
	live := w.log.live()
	if len(live) < 2 {
		return nil
	}
	before := w.estimate(w.log.maskThrough)
	prev := w.log.latest
	c := Condensation{Kind: KindReset, FromStep: live[0].step, ThroughStep: live[len(live)-2].step, Truncated: true, Budget: w.cfg.Budget, TokensBefore: before}
	if prev != nil {
		c.Summary, c.Depth = prev.Summary, prev.Depth+1
	}
	c.Summary = join(w.clipTokens(c.Summary, w.summaryMax()/2), fmt.Sprintf("(Steps %d to %d were dropped from the conversation without a summary to fit the context window; the recall tool finds them.)", c.FromStep, c.ThroughStep))
	c.TokensAfter = w.estimateAfter(&c)
	if err := w.cfg.Emit(ctx, drydock.EventCondensation, c); err != nil {
		return err
	}
	w.sync()
	return nil
}

// estimateAfter is the prompt's size once c is recorded.
func (w *Window) estimateAfter(c *Condensation) int {
	saved := w.log.latest
	w.log.latest = c
	defer func() { w.log.latest = saved }()
	return w.estimate(w.log.maskThrough)
}

// clipTokens cuts s (keeping its head and tail) to at most n tokens as the
// provider counts them.
func (w *Window) clipTokens(s string, n int) string {
	count := func(s string) int { return w.cfg.Meter.Scale(w.cfg.Meter.Count(s)) }
	c := count(s)
	if c <= n {
		return s
	}
	size := len(s) * n / c
	for range 8 {
		t := clipText(s, size)
		if count(t) <= n {
			return t
		}
		size = size * 4 / 5
	}
	return strings.ToValidUTF8(s[:min(len(s), max(n, 0))], "")
}

// hiddenOutputs renders the outputs a masked unit hides, cut to n bytes, for a
// summary request made in the conversation; empty when it hides none.
func (u *unit) hiddenOutputs(n int) string {
	var b strings.Builder
	for i, c := range u.calls {
		o := u.results[i]
		if o == nil || maskOutput(o) == o.Output {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[step %d] %s result: %s", u.step, c.Name, clipText(o.Output, n))
	}
	return b.String()
}

// text4summary renders a unit for the summarizer.
func (u *unit) text4summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[step %d]", u.step)
	if t := strings.TrimSpace(u.text); t != "" {
		fmt.Fprintf(&b, " assistant: %s", clipText(t, summaryOutputBytes))
	}
	for i, c := range u.calls {
		fmt.Fprintf(&b, "\ncall %s %s", c.Name, clipInput(c.Input, summaryInputBytes))
		switch o := u.results[i]; {
		case o == nil:
			b.WriteString("\nresult: (interrupted; no result)")
		case o.IsError:
			fmt.Fprintf(&b, "\nresult (error): %s", clipText(o.Output, summaryOutputBytes))
		default:
			fmt.Fprintf(&b, "\nresult: %s", clipText(o.Output, summaryOutputBytes))
		}
	}
	for _, n := range u.notes {
		fmt.Fprintf(&b, "\nnote from the orchestrator: %s", clipText(n, summaryOutputBytes))
	}
	return b.String()
}

// digest is the summary when the model gives none: the previous summary
// and one line per step.
func digest(prev *Condensation, units []*unit, why string) string {
	var b strings.Builder
	if prev != nil {
		b.WriteString(prev.Summary)
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "Steps %d to %d, listed because they could not be summarized (%s):", units[0].step, units[len(units)-1].step, why)
	for _, u := range units {
		for i, c := range u.calls {
			result := "no result"
			if o := u.results[i]; o != nil {
				first, _, _ := strings.Cut(strings.TrimSpace(o.Output), "\n")
				result = clipText(first, 120)
				if o.IsError {
					result = "error: " + result
				}
			}
			fmt.Fprintf(&b, "\n- step %d: %s %s -> %s", u.step, c.Name, clipInput(c.Input, 150), result)
		}
		if len(u.calls) == 0 && strings.TrimSpace(u.text) != "" {
			fmt.Fprintf(&b, "\n- step %d: said %q", u.step, clipText(strings.TrimSpace(u.text), 150))
		}
	}
	return b.String()
}
