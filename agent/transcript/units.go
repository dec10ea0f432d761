package transcript

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
)

// interrupted answers a call that has no observation.
const interrupted = "This tool call was interrupted before it returned; its effect is unknown. Check the state before repeating it."

// unit is the smallest piece of the conversation that can be cut away: a
// model turn that showed something, the results of its calls, and the
// notices that follow it (which join the user message after the results).
// Cutting between units never separates a call from its result.
type unit struct {
	step int
	// reasoning goes back with the turn, unchanged, unless the unit is
	// masked and it matters to the latest turns only
	// (llm.Reasoning.LatestOnly: Anthropic's thinking), where older ones
	// cost context.
	reasoning *llm.Reasoning
	text      string
	calls     []llm.ToolCall
	results   []*Observation // by call; nil while a call has no observation
	notes     []string
	// shots are the notices' images, each as an observation with images
	// only, so that they are kept and counted as the results' are.
	shots []*Observation
	// memo holds token counts of the rendering without images, by mask
	// state; 0 when not counted since the unit last changed. shown holds
	// the renderings themselves, when they show no image.
	memo  [2]int
	shown [2]*[2]llm.Message
}

// images counts the images the unit's results and notices carry.
func (u *unit) images() int {
	n := 0
	for _, r := range u.pictured() {
		n += len(r.Images)
	}
	return n
}

// pictured returns the unit's results with images, then its notices'
// images, in the order the prompt shows them.
func (u *unit) pictured() []*Observation {
	var out []*Observation
	for _, r := range u.results {
		if r != nil && len(r.Images) > 0 {
			out = append(out, r)
		}
	}
	return append(out, u.shots...)
}

// observed counts the unit's results.
func (u *unit) observed() int {
	n := 0
	for _, r := range u.results {
		if r != nil {
			n++
		}
	}
	return n
}

func (u *unit) changed() { u.memo, u.shown = [2]int{}, [2]*[2]llm.Message{} }

// log is the job's event log read into units, incrementally: events only
// ever get appended.
type log struct {
	seen  int      // events read
	head  []string // notices before the first unit
	units []*unit
	// latest is the newest condensation; maskThrough the newest mask.
	latest      *Condensation
	maskThrough int
	// cutNotes records the steps whose view was cut to fit, so each is
	// noted in the log once.
	cutNotes map[int]bool
}

// read takes the events not read yet.
func (l *log) read(events []*drydock.Event) {
	if l.seen > len(events) {
		*l = log{} // a different log: start over
	}
	for _, e := range events[l.seen:] {
		l.add(e)
	}
	l.seen = len(events)
}

func (l *log) last() *unit {
	if len(l.units) == 0 {
		return nil
	}
	return l.units[len(l.units)-1]
}

func (l *log) add(e *drydock.Event) {
	switch e.Type {
	case drydock.EventModel:
		var t ModelTurn
		if json.Unmarshal(e.Data, &t) != nil {
			return
		}
		if strings.TrimSpace(t.Text) == "" && len(t.ToolCalls) == 0 {
			return // nothing to show; what follows joins the previous unit
		}
		l.units = append(l.units, &unit{step: t.Step, reasoning: t.Reasoning, text: t.Text, calls: t.ToolCalls, results: make([]*Observation, len(t.ToolCalls))})
	case drydock.EventObservation:
		var o Observation
		u := l.last()
		if u == nil || json.Unmarshal(e.Data, &o) != nil {
			return
		}
		for k, c := range u.calls {
			if c.ID == o.ID && u.results[k] == nil {
				u.results[k] = &o
				u.changed()
				break
			}
		}
	case drydock.EventLog:
		var n drydock.LogEvent
		if json.Unmarshal(e.Data, &n) != nil {
			return
		}
		switch n.Kind {
		case KindMask:
			l.maskThrough = max(l.maskThrough, n.ThroughStep)
			return
		case KindCut:
			if l.cutNotes == nil {
				l.cutNotes = map[int]bool{}
			}
			l.cutNotes[n.Step] = true
			return
		}
		if !n.Notice || n.Message == "" {
			return
		}
		if u := l.last(); u != nil {
			u.notes = append(u.notes, n.Message)
			if len(n.Images) > 0 {
				u.shots = append(u.shots, &Observation{Name: "notice", Images: n.Images})
			}
			u.changed()
		} else {
			// Before the first turn there is no unit to hold an image:
			// the notice names its files.
			msg := n.Message
			for _, ref := range n.Images {
				msg = join(msg, fmt.Sprintf("[image not shown: %s]", ref.Path))
			}
			l.head = append(l.head, msg)
		}
	case drydock.EventCondensation:
		var c Condensation
		if json.Unmarshal(e.Data, &c) != nil || c.ThroughStep <= 0 {
			return
		}
		if l.latest == nil || c.ThroughStep >= l.latest.ThroughStep {
			l.latest = &c
		}
	}
}

// cutStep is the last step the newest condensation holds: units up to it
// are out of the prompt.
func (l *log) cutStep() int {
	if l.latest == nil {
		return 0
	}
	return l.latest.ThroughStep
}

// live returns the units the prompt shows: those after the newest
// condensation.
func (l *log) live() []*unit {
	cut := l.cutStep()
	for i, u := range l.units {
		if u.step > cut {
			return l.units[i:]
		}
	}
	return nil
}

// render is how a unit is shown.
type render struct {
	masked bool
	// show marks the results whose images are shown; the others name
	// their files.
	show map[*Observation]bool
	// clip, when positive, cuts every text of the unit to about that many
	// bytes: the last resort when one unit alone does not fit.
	clip int
}

// messages renders a unit: the assistant's turn and the user message that
// answers it. The user message is never empty, since both APIs need the
// user to speak between assistant turns. Renderings without images or cuts
// are kept: a long prompt is mostly units that are shown the same way step
// after step.
func (u *unit) messages(rd render, image func(ImageRef) (llm.Image, bool)) (llm.Message, llm.Message) {
	k := 0
	if rd.masked {
		k = 1
	}
	plain := rd.clip == 0
	for _, r := range u.pictured() {
		if rd.show[r] && image != nil {
			plain = false
		}
	}
	if plain && u.shown[k] != nil {
		return u.shown[k][0], u.shown[k][1]
	}
	a, m := u.build(rd, image)
	if plain {
		u.shown[k] = &[2]llm.Message{a, m}
	}
	return a, m
}

func (u *unit) build(rd render, image func(ImageRef) (llm.Image, bool)) (llm.Message, llm.Message) {
	a := llm.Message{Role: llm.RoleAssistant, Text: u.text, ToolCalls: u.calls}
	if !rd.masked || !u.reasoning.LatestOnly() {
		// Never clipped: an altered record is refused.
		a.Reasoning = u.reasoning
	}
	if rd.masked || rd.clip > 0 {
		limit := maskedInputBytes
		if rd.clip > 0 {
			limit = min(limit, rd.clip)
			a.Text = clipText(a.Text, rd.clip)
		}
		a.ToolCalls = make([]llm.ToolCall, len(u.calls))
		for i, c := range u.calls {
			c.Input = clipInput(c.Input, limit)
			a.ToolCalls[i] = c
		}
	}
	m := llm.Message{Role: llm.RoleUser}
	for i, c := range u.calls {
		o := u.results[i]
		if o == nil {
			m.ToolResults = append(m.ToolResults, llm.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Output: interrupted})
			continue
		}
		r := llm.ToolResult{CallID: o.ID, Name: o.Name, Output: o.Output, IsError: o.IsError}
		switch {
		case rd.masked:
			r.Output = maskOutput(o)
		case rd.clip > 0:
			r.Output = clipText(r.Output, rd.clip)
		}
		for _, ref := range o.Images {
			if rd.show[o] && image != nil {
				if img, ok := image(ref); ok {
					r.Images = append(r.Images, img)
					continue
				}
			}
			r.Output = join(r.Output, fmt.Sprintf("[image not shown: %s]", ref.Path))
		}
		m.ToolResults = append(m.ToolResults, r)
	}
	for _, n := range u.notes {
		if rd.clip > 0 {
			n = clipText(n, rd.clip)
		}
		m.Text = join(m.Text, n)
	}
	for _, o := range u.shots {
		for _, ref := range o.Images {
			if rd.show[o] && image != nil {
				if img, ok := image(ref); ok {
					m.Images = append(m.Images, img)
					continue
				}
			}
			m.Text = join(m.Text, fmt.Sprintf("[image not shown: %s]", ref.Path))
		}
	}
	if m.Text == "" && len(m.ToolResults) == 0 {
		m.Text = Continue
	}
	return a, m
}

// Limits of masked units: short outputs stay (hiding them saves nothing),
// long call inputs (a file written whole) are cut.
const (
	maskKeepBytes    = 300
	maskedInputBytes = 400
)

// maskOutput replaces an old observation with a note of what it was.
func maskOutput(o *Observation) string {
	if len(o.Output) <= maskKeepBytes {
		return o.Output
	}
	first, _, _ := strings.Cut(strings.TrimSpace(o.Output), "\n")
	if len(first) > 120 {
		first = strings.ToValidUTF8(first[:120], "") + "..."
	}
	s := fmt.Sprintf("[Older output hidden to save context: %d lines, %d bytes, starting %q. The recall tool searches it", strings.Count(o.Output, "\n")+1, len(o.Output), first)
	if o.OutputPath != "" {
		s += "; the whole output is in " + o.OutputPath
	}
	return s + ".]"
}

// clipText keeps the head and tail of s within about n bytes.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	mark := fmt.Sprintf("\n[... %d bytes cut to fit the context; the recall tool finds them ...]\n", len(s))
	half := max((n-len(mark))/2, 16)
	if 2*half >= len(s) {
		return s
	}
	return strings.ToValidUTF8(s[:half], "") + mark + strings.ToValidUTF8(s[len(s)-half:], "")
}

// clipInput cuts the long strings of a call's input, keeping it a JSON
// object as both APIs require.
func clipInput(in json.RawMessage, n int) json.RawMessage {
	if len(in) <= n {
		return in
	}
	var v map[string]any
	if json.Unmarshal(in, &v) != nil || v == nil {
		return llm.ObjectInput(in)
	}
	for k, x := range v {
		if s, ok := x.(string); ok && len(s) > n {
			v[k] = clipText(s, n)
		}
	}
	out, err := json.Marshal(v)
	if err != nil {
		return in
	}
	return out
}
