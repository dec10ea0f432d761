package transcript_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/tokens"
	"github.com/google/go-cmp/cmp"
)

// job is an event log with a scripted summarizer.
type job struct {
	t        testing.TB
	events   []*drydock.Event
	requests []*llm.Request // summary requests
	// summarize answers a summary request; the default names the steps.
	summarize func(req *llm.Request) (*llm.Response, error)
}

var stepsRange = regexp.MustCompile(`<steps from="(\d+)" to="(\d+)">`)

func newJob(t testing.TB) *job {
	j := &job{t: t}
	j.summarize = func(req *llm.Request) (*llm.Response, error) {
		m := stepsRange.FindStringSubmatch(req.Messages[len(req.Messages)-1].Text)
		return &llm.Response{Text: fmt.Sprintf("Folded steps %s to %s.", m[1], m[2]), Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}}, nil
	}
	return j
}

func (j *job) emit(_ context.Context, typ drydock.EventType, v any) error {
	j.events = append(j.events, drydock.NewEvent("j", typ, v))
	return nil
}

func (j *job) step(n int, output string) {
	id := fmt.Sprintf("call_%d", n)
	j.emit(nil, drydock.EventModel, transcript.ModelTurn{Step: n, Text: fmt.Sprintf("Step %d.", n), ToolCalls: []llm.ToolCall{{ID: id, Name: "bash", Input: json.RawMessage(fmt.Sprintf(`{"command":"run %d"}`, n))}}})
	j.emit(nil, drydock.EventObservation, transcript.Observation{Step: n, ID: id, Name: "bash", Output: output})
}

func (j *job) ofType(typ drydock.EventType) []*drydock.Event {
	var out []*drydock.Event
	for _, e := range j.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func (j *job) condensations() []transcript.Condensation {
	var out []transcript.Condensation
	for _, e := range j.ofType(drydock.EventCondensation) {
		var c transcript.Condensation
		if err := json.Unmarshal(e.Data, &c); err != nil {
			j.t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func (j *job) notes(kind string) []transcript.ContextNote {
	var out []transcript.ContextNote
	for _, e := range j.ofType(drydock.EventLog) {
		var n transcript.ContextNote
		if json.Unmarshal(e.Data, &n) == nil && n.Kind == kind {
			out = append(out, n)
		}
	}
	return out
}

var tools = []llm.Tool{{Name: "bash", Description: "Run a command.", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}}

func (j *job) window(budget, keep int) *transcript.Window {
	return transcript.NewWindow(transcript.Config{
		Task:             "Your task:\n\nBuild the thing.",
		System:           "You are an agent.",
		Tools:            tools,
		Model:            "gpt-4.1",
		Meter:            tokens.NewMeter(tokens.For("openai", "gpt-4.1")),
		Budget:           budget,
		KeepObservations: keep,
		Events:           func() []*drydock.Event { return j.events },
		Emit:             j.emit,
		Complete: func(_ context.Context, req *llm.Request) (*llm.Response, error) {
			j.requests = append(j.requests, req)
			return j.summarize(req)
		},
	})
}

// valid checks what both APIs require of a conversation.
func valid(t *testing.T, msgs []llm.Message) {
	t.Helper()
	for i, m := range msgs {
		want := llm.RoleUser
		if i%2 == 1 {
			want = llm.RoleAssistant
		}
		if m.Role != want {
			t.Fatalf("message %d is %s, want %s", i, m.Role, want)
		}
		if m.Role == llm.RoleUser && strings.TrimSpace(m.Text) == "" && len(m.ToolResults) == 0 {
			t.Fatalf("message %d is an empty user message", i)
		}
		var calls []llm.ToolCall
		if i > 0 && msgs[i-1].Role == llm.RoleAssistant {
			calls = msgs[i-1].ToolCalls
		}
		if m.Role == llm.RoleUser {
			if len(calls) != len(m.ToolResults) {
				t.Fatalf("message %d answers %d of %d calls", i, len(m.ToolResults), len(calls))
			}
			for k, c := range calls {
				if m.ToolResults[k].CallID != c.ID {
					t.Fatalf("message %d answers %s where %s was called", i, m.ToolResults[k].CallID, c.ID)
				}
			}
		}
		for _, c := range m.ToolCalls {
			var obj map[string]any
			if json.Unmarshal(c.Input, &obj) != nil {
				t.Fatalf("message %d: call input %s is not an object", i, c.Input)
			}
		}
	}
	if last := msgs[len(msgs)-1]; last.Role != llm.RoleUser {
		t.Fatalf("the conversation ends with %s", last.Role)
	}
}

func TestWindowUnderBudgetIsTheWholeConversation(t *testing.T) {
	t.Parallel()
	j := newJob(t)
	for i := 1; i <= 5; i++ {
		j.step(i, strings.Repeat("output line\n", 50))
	}
	p, err := j.window(100_000, 20).Prompt(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := transcript.Messages(j.events, transcript.Options{Task: "Your task:\n\nBuild the thing."})
	if diff := cmp.Diff(want, p.Messages); diff != "" {
		t.Errorf("prompt (-want +got):\n%s", diff)
	}
	// The count is the request's.
	req := &llm.Request{System: "You are an agent.", Tools: tools, Messages: p.Messages}
	if got := tokens.Request(tokens.For("openai", "gpt-4.1"), req); got != p.Counted || p.Estimate != p.Counted {
		t.Errorf("counted %d, estimate %d; the request counts %d", p.Counted, p.Estimate, got)
	}
	if len(j.events) != 10 || len(j.requests) != 0 {
		t.Errorf("%d events, %d summaries: nothing should be recorded", len(j.events), len(j.requests))
	}
}

func TestWindowMasksOldOutputsInChunks(t *testing.T) {
	t.Parallel()
	j := newJob(t)
	w := j.window(200_000, 10)
	var masks []int
	for i := 1; i <= 40; i++ {
		j.step(i, fmt.Sprintf("result of step %d\n", i)+strings.Repeat("x", 1000))
		p, err := w.Prompt(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		valid(t, p.Messages)
		ns := j.notes(transcript.KindMask)
		if n := len(ns); n > 0 && (len(masks) == 0 || masks[len(masks)-1] != ns[n-1].ThroughStep) {
			masks = append(masks, ns[n-1].ThroughStep)
		}
		// The latest 10 results are whole; masked ones say what they were.
		results := 0
		for _, m := range p.Messages {
			for _, r := range m.ToolResults {
				results++
				whole := strings.HasPrefix(r.Output, "result of step")
				if masked := strings.HasPrefix(r.Output, "[Older output hidden to save context: 2 lines, "); whole == masked {
					t.Fatalf("step %d: result %q", i, r.Output[:60])
				}
			}
		}
		if results != i {
			t.Fatalf("step %d: %d results in the prompt", i, results)
		}
	}
	// Masked when 16 are whole (10 + half of 10), down to 10 each time.
	if diff := cmp.Diff([]int{6, 12, 18, 24, 30}, masks); diff != "" {
		t.Errorf("masked through (-want +got):\n%s", diff)
	}
	if len(j.requests) != 0 {
		t.Errorf("%d summaries under a large budget", len(j.requests))
	}
}

func TestWindowCondensesWhenOverBudget(t *testing.T) {
	t.Parallel()
	j := newJob(t)
	const budget = 6000
	w := j.window(budget, 20)
	var prev *transcript.Prompt
	shared := 0 // summary requests that continue the previous prompt
	for i := 1; i <= 120; i++ {
		j.step(i, fmt.Sprintf("step %d says %s", i, strings.Repeat("lorem ipsum dolor sit amet ", 40)))
		asked := len(j.requests)
		p, err := w.Prompt(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(j.requests) > asked && prev != nil {
			r := j.requests[asked]
			if n := len(r.Messages) - 1; r.NoToolCalls && n <= len(prev.Messages) && cmp.Equal(r.Messages[:n], prev.Messages[:n]) {
				shared++
			}
		}
		valid(t, p.Messages)
		if p.Estimate > budget {
			t.Fatalf("step %d: prompt of %d tokens over the %d budget", i, p.Estimate, budget)
		}
		// The last step is always there, whole.
		last := p.Messages[len(p.Messages)-1]
		if !strings.HasPrefix(last.ToolResults[0].Output, fmt.Sprintf("step %d says", i)) {
			t.Fatalf("step %d: last result %q", i, last.ToolResults[0].Output)
		}
		prev = p
	}
	cs := j.condensations()
	if len(cs) < 3 {
		t.Fatalf("%d condensations in 120 steps of a 6k budget", len(cs))
	}
	if shared == 0 {
		t.Errorf("no summary request continued the previous prompt (%d condensations)", len(cs))
	}
	for k, c := range cs {
		if c.Kind != transcript.KindSummary || c.Depth != k || c.TokensAfter >= c.TokensBefore || c.Budget != budget {
			t.Errorf("condensation %d: %+v", k, c)
		}
		if k > 0 && c.FromStep != cs[k-1].ThroughStep+1 {
			t.Errorf("condensation %d starts at step %d, after %d", k, c.FromStep, cs[k-1].ThroughStep)
		}
		if want := fmt.Sprintf("Folded steps %d to %d.", c.FromStep, c.ThroughStep); c.Summary != want {
			t.Errorf("summary %q, want %q", c.Summary, want)
		}
	}
	// Each summary request continued the agent's conversation (its system
	// prompt and tools, the first message with the task and the previous
	// summary: recursion) with the steps folded, then asked for the
	// summary without tool calls.
	last := cs[len(cs)-1]
	r := j.requests[len(j.requests)-1]
	if r.System != "You are an agent." || !cmp.Equal(r.Tools, tools) || !r.NoToolCalls {
		t.Errorf("the last summary request is not made in the conversation: system %q, %d tools, no tool calls %v", r.System, len(r.Tools), r.NoToolCalls)
	}
	valid(t, r.Messages[:len(r.Messages)-1])
	var req strings.Builder
	for _, m := range r.Messages {
		req.WriteString(m.Text + "\n")
	}
	for _, s := range []string{cs[len(cs)-2].Summary, "Build the thing.", fmt.Sprintf("Step %d.", last.FromStep), fmt.Sprintf("Step %d.", last.ThroughStep), fmt.Sprintf(`<steps from="%d" to="%d">`, last.FromStep, last.ThroughStep)} {
		if !strings.Contains(req.String(), s) {
			t.Errorf("the last summary request lacks %q", s)
		}
	}
	// Every output folded is in it: in the conversation, or in the last
	// turn where the conversation masks it.
	for _, m := range r.Messages {
		for _, tr := range m.ToolResults {
			req.WriteString(tr.Output + "\n")
		}
	}
	for k := last.FromStep; k <= last.ThroughStep; k++ {
		if !strings.Contains(req.String(), fmt.Sprintf("step %d says lorem", k)) {
			t.Errorf("the last summary request lacks the output of step %d", k)
		}
	}
	// The prompt: the task with the latest summary, then the steps after it.
	first := prev.Messages[0].Text
	if !strings.HasPrefix(first, "Your task:\n\nBuild the thing.") || !strings.Contains(first, last.Summary) || !strings.Contains(first, fmt.Sprintf("steps 1 to %d", last.ThroughStep)) {
		t.Errorf("first message %q", first)
	}
	if prev.Messages[1].Text != fmt.Sprintf("Step %d.", last.ThroughStep+1) {
		t.Errorf("the prompt resumes at %q, want step %d", prev.Messages[1].Text, last.ThroughStep+1)
	}
	// Condensing leaves room to grow: on average many steps between two.
	if avg := 120 / len(cs); avg < 5 {
		t.Errorf("a condensation every %d steps", avg)
	}
	// A new window over the same log (a resumed run) builds the same prompt.
	again, err := j.window(budget, 20).Prompt(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(prev.Messages, again.Messages); diff != "" {
		t.Errorf("resumed prompt differs (-before +after):\n%s", diff)
	}
}

// A model that calls a tool in a summary request made in the conversation
// (Anthropic's cannot be forbidden to without losing the cache) gets a
// prompt of its own, without tools.
func TestWindowSummarizesApartWhenTheModelCallsATool(t *testing.T) {
	t.Parallel()
	j := newJob(t)
	j.summarize = func(req *llm.Request) (*llm.Response, error) {
		if len(req.Tools) > 0 {
			return &llm.Response{Text: "Let me look.", ToolCalls: []llm.ToolCall{{ID: "x", Name: "bash", Input: json.RawMessage(`{"command":"ls"}`)}}, StopReason: llm.StopToolUse}, nil
		}
		m := stepsRange.FindStringSubmatch(req.Messages[0].Text)
		return &llm.Response{Text: fmt.Sprintf("Folded steps %s to %s.", m[1], m[2])}, nil
	}
	w := j.window(6000, 20)
	for i := 1; i <= 60; i++ {
		j.step(i, fmt.Sprintf("step %d says %s", i, strings.Repeat("lorem ipsum dolor sit amet ", 40)))
		if _, err := w.Prompt(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	cs := j.condensations()
	if len(cs) == 0 {
		t.Fatal("no condensation")
	}
	inConv := 0
	for _, r := range j.requests {
		if r.NoToolCalls {
			inConv++
		}
	}
	if inConv != len(cs) || len(j.requests) != 2*len(cs) {
		t.Errorf("%d requests (%d in the conversation) for %d condensations; want each tried in the conversation, then apart", len(j.requests), inConv, len(cs))
	}
	for _, c := range cs {
		if c.Kind != transcript.KindSummary || c.Summary != fmt.Sprintf("Folded steps %d to %d.", c.FromStep, c.ThroughStep) {
			t.Errorf("condensation %+v", c)
		}
	}
}

func TestWindowFallsBackWhenTheModelFails(t *testing.T) {
	t.Parallel()
	j := newJob(t)
	calls := 0
	j.summarize = func(req *llm.Request) (*llm.Response, error) {
		calls++
		switch calls {
		case 1:
			return nil, drydock.Errorf(drydock.EUNAVAILABLE, "the model is overloaded")
		case 2:
			return &llm.Response{Text: strings.Repeat("A very long summary. ", 3000), StopReason: llm.StopMaxTokens}, nil
		}
		return &llm.Response{Text: "fine"}, nil
	}
	w := j.window(6000, 20)
	for i := 1; i <= 60 && calls < 2; i++ {
		j.step(i, fmt.Sprintf("step %d: %s", i, strings.Repeat("word ", 150)))
		p, err := w.Prompt(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		valid(t, p.Messages)
		if p.Estimate > 6000 {
			t.Fatalf("step %d: %d tokens", i, p.Estimate)
		}
	}
	cs := j.condensations()
	if len(cs) < 2 {
		t.Fatalf("%d condensations", len(cs))
	}
	d := cs[0]
	if d.Kind != transcript.KindDigest || d.Error != "the model is overloaded" || !strings.Contains(d.Summary, "could not be summarized") ||
		!strings.Contains(d.Summary, fmt.Sprintf(`- step %d: bash {"command":"run %d"} -> step %d: word`, d.FromStep, d.FromStep, d.FromStep)) {
		t.Errorf("digest %+v", d)
	}
	long := cs[1]
	if long.Kind != transcript.KindSummary || !long.Truncated || len(long.Summary) > 6000 || !strings.HasPrefix(long.Summary, "A very long summary.") {
		t.Errorf("long summary: kind %s truncated %v, %d bytes", long.Kind, long.Truncated, len(long.Summary))
	}

	// Only ctx ending is an error.
	j.summarize = func(*llm.Request) (*llm.Response, error) { return nil, context.Canceled }
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for i := 100; i < 200; i++ {
		j.step(i, strings.Repeat("word ", 150))
		if _, err := w.Prompt(ctx); err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v", err)
			}
			return
		}
	}
	t.Error("a cancelled summary did not end Prompt")
}

// A single step bigger than the budget: everything else goes, and the
// step's texts are cut, once noted in the log.
func TestWindowResetsAndCutsWhatCannotFit(t *testing.T) {
	t.Parallel()
	j := newJob(t)
	const budget = 5000
	w := j.window(budget, 20)
	for i := 1; i <= 3; i++ {
		j.step(i, "small")
	}
	huge := "HEAD " + strings.Repeat("many different words here ", 4000) + " TAIL"
	j.step(4, huge)
	for range 2 {
		p, err := w.Prompt(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		valid(t, p.Messages)
		if p.Estimate > budget {
			t.Fatalf("%d tokens over the budget", p.Estimate)
		}
		if len(p.Messages) != 3 {
			t.Fatalf("%d messages; want the task and the last step", len(p.Messages))
		}
		out := p.Messages[2].ToolResults[0].Output
		if !strings.HasPrefix(out, "HEAD") || !strings.HasSuffix(out, "TAIL") || !strings.Contains(out, "bytes cut to fit the context") {
			t.Errorf("cut output %q ... %q", out[:50], out[len(out)-50:])
		}
	}
	cs := j.condensations()
	if n := len(cs); n == 0 || cs[n-1].ThroughStep != 3 {
		t.Fatalf("condensations %+v", cs)
	}
	if cuts := j.notes(transcript.KindCut); len(cuts) != 1 || cuts[0].Step != 4 {
		t.Errorf("cut notes %+v; want one for step 4", cuts)
	}
}

// When the steps to fold do not fit one summary request, they are folded
// in several, each building on the one before.
func TestWindowFoldsInChunks(t *testing.T) {
	t.Parallel()
	j := newJob(t)
	big := transcript.NewWindow(transcript.Config{Task: "t", Meter: tokens.NewMeter(tokens.Estimate{}), Budget: 400_000,
		Events: func() []*drydock.Event { return j.events }, Emit: j.emit})
	for i := 1; i <= 60; i++ {
		j.step(i, strings.Repeat(fmt.Sprintf("line %d of a long build log\n", i), 60))
		if _, err := big.Prompt(t.Context()); err != nil { // masks as it goes
			t.Fatal(err)
		}
	}
	// The same log under a budget where summaries see few steps at a time.
	w := j.window(5000, 20)
	p, err := w.Prompt(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	valid(t, p.Messages)
	cs := j.condensations()
	if len(cs) < 3 {
		t.Fatalf("%d condensations; want the steps folded in chunks", len(cs))
	}
	for k, c := range cs {
		if c.Depth != k || (k > 0 && c.FromStep != cs[k-1].ThroughStep+1) {
			t.Errorf("chunk %d: %+v", k, c)
		}
	}
	for k, req := range j.requests {
		if n := tokens.Request(tokens.For("openai", "gpt-4.1"), req); n > 5000 {
			t.Errorf("summary request %d has %d tokens", k, n)
		}
	}
}

// Only the latest screenshots are shown, never in masked results, and
// each shown one counts against the budget.
func TestWindowShowsOnlyRecentImages(t *testing.T) {
	t.Parallel()
	j := newJob(t)
	for i := 1; i <= 8; i++ {
		id := fmt.Sprintf("shot_%d", i)
		j.emit(nil, drydock.EventModel, transcript.ModelTurn{Step: i, ToolCalls: []llm.ToolCall{{ID: id, Name: "computer", Input: json.RawMessage(`{"action":"screenshot"}`)}}})
		j.emit(nil, drydock.EventObservation, transcript.Observation{Step: i, ID: id, Name: "computer", Output: "screenshot taken",
			Images: []transcript.ImageRef{{Path: fmt.Sprintf("s%d.png", i), MediaType: "image/png"}}})
	}
	cfg := func(keep int, image bool) transcript.Config {
		c := transcript.Config{Task: "t", Meter: tokens.NewMeter(tokens.Estimate{}), Budget: 100_000, KeepImages: keep,
			Events: func() []*drydock.Event { return j.events }, Emit: j.emit}
		if image {
			c.Image = func(r transcript.ImageRef) (llm.Image, bool) {
				return llm.Image{MediaType: "image/png", Data: []byte(r.Path)}, true
			}
		}
		return c
	}
	p, err := transcript.NewWindow(cfg(3, true)).Prompt(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, m := range p.Messages {
		for _, r := range m.ToolResults {
			for _, img := range r.Images {
				shown = append(shown, string(img.Data))
			}
			if len(r.Images) == 0 && !strings.Contains(r.Output, "[image not shown: s") {
				t.Errorf("a hidden image is not named: %q", r.Output)
			}
		}
	}
	if diff := cmp.Diff([]string{"s6.png", "s7.png", "s8.png"}, shown); diff != "" {
		t.Errorf("images shown (-want +got):\n%s", diff)
	}
	none, err := transcript.NewWindow(cfg(3, false)).Prompt(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Counted - none.Counted; d < 3*tokens.ImageTokens {
		t.Errorf("three images add %d tokens", d)
	}
}
