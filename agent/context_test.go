package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
	"github.com/drydockhq/drydock/llm/tokens"
	"github.com/drydockhq/drydock/runtime/runtimetest"
	"github.com/google/go-cmp/cmp"
)

// longRun is the scripted model of a long job: each step runs a command
// printing about 1 KB (twenty numbered lines); step needleStep prints a random launch code made in
// the sandbox, which the model reads from the result; step recallStep
// recalls it; the last step finishes. Summary requests (no tools offered)
// are answered with a summary naming the steps they fold.
type longRun struct {
	steps, needleStep, recallStep int

	mu     sync.Mutex
	n      int    // tool requests so far
	needle string // the launch code, once seen
	// byStep holds each step's request.
	byStep    map[int]*llmtest.Request
	summaries int
}

var (
	launchCode = regexp.MustCompile(`launch code: ([0-9a-f]{16})`)
	foldRange  = regexp.MustCompile(`<steps from="(\d+)" to="(\d+)">`)
)

func (m *longRun) answer(req *llmtest.Request) llmtest.Turn {
	m.mu.Lock()
	defer m.mu.Unlock()
	if isSummary(req) {
		m.summaries++
		r := foldRange.FindStringSubmatch(req.LastUser().Text)
		if r == nil {
			return llmtest.Turn{Text: "Summary: no steps found."}
		}
		return llmtest.Turn{Text: fmt.Sprintf("Summary of steps 1 to %s: each step printed twenty numbered lorem ipsum lines; step %d printed the launch code (use recall to find it). Nothing failed.", r[2], m.needleStep)}
	}
	m.n++
	n := m.n
	m.byStep[n] = req
	if n == m.needleStep+1 && len(req.LastUser().ToolResults) > 0 {
		if c := launchCode.FindStringSubmatch(req.LastUser().ToolResults[0].Output); c != nil {
			m.needle = c[1]
		}
	}
	var c llm.ToolCall
	switch {
	case n == m.steps:
		c = call("finish", map[string]string{"summary": "ran all the steps"})
	case n == m.needleStep:
		c = call("bash", map[string]string{"command": `echo "launch code: $(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"`})
	case n == m.recallStep:
		c = call("recall", map[string]string{"query": "launch code"})
	case n > 50 && n%50 == 25:
		// Recalls of older outputs, for their latency.
		c = call("recall", map[string]string{"query": fmt.Sprintf("step %d line 7", n-40)})
	default:
		// Shell builtins only: on a busy machine, forking a program in
		// the container (seq) took 30-200 ms a step where this takes 3.
		c = call("bash", map[string]string{"command": fmt.Sprintf("for i in {1..20}; do printf 'step %d line %%d: lorem ipsum dolor sit amet, consectetur\\n' $i; done", n)})
	}
	return llmtest.Turn{Text: fmt.Sprintf("Step %d.", n), ToolCalls: []llm.ToolCall{c}}
}

// isSummary tells the context manager's summary requests from the steps:
// a prompt of their own has no tools; one made in the conversation asks
// for the steps to fold in its last user turn.
func isSummary(r *llmtest.Request) bool {
	return len(r.Tools) == 0 || foldRange.MatchString(r.LastUser().Text)
}

// promptTokens is the size of a request's prompt as the model server
// counted it: the tokens read from and written to its prompt cache
// included.
func promptTokens(r *llmtest.Request) int64 {
	u := r.Answer.Usage
	return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// A 1,000-step run under an 8k-token budget in a real sandbox on each
// container engine: every request the model receives fits (as the model
// server counts it), the run completes, condensations and masks are in the
// log, a launch code printed at step 10 and long gone from the prompt is
// found with recall at step 900 and shown to the model in the tool result,
// and most of each prompt is read from the provider's prompt cache.
func TestLongRunStaysWithinTheBudget(t *testing.T) {
	t.Parallel()
	const budget, steps = 8000, 1000
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			host := requireEngine(t, eng.env)
			image := runtimetest.CurrentImage(t, host)
			apis(t, func(t *testing.T, api string) {
				runLong(t, host, image, api, budget, steps)
			})
		})
	}
}

// runLong is one long run in a new sandbox from image on the engine at
// host, through api's provider.
func runLong(t *testing.T, host, image, api string, budget, steps int) {
	sb := engineSandbox(t, host, image, drydock.ProfileHeadless)
	m := &longRun{steps: steps, needleStep: 10, recallStep: steps * 9 / 10, byStep: map[int]*llmtest.Request{}}
	b := newBundle(t, sb, api, llmtest.Options{Func: m.answer}, agent.Config{MaxSteps: steps + 10})
	j := job("Run the scripted steps.")
	j.ContextBudget = budget
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	out, err := b.agent.Run(ctx, &drydock.AgentRun{Job: j, Sandbox: b.sb, Events: b.rec,
		Progress: func(context.Context, int, drydock.Usage) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	if out.Summary != "ran all the steps" {
		t.Errorf("summary %q", out.Summary)
	}

	reqs := b.srv.Requests()
	over := 0
	for _, r := range reqs {
		if in := promptTokens(r); in > int64(budget) {
			over++
			if over < 5 {
				t.Errorf("request %d (%d messages, tools %v): %d input tokens over the %d budget", r.N, len(r.Messages), len(r.Tools) > 0, in, budget)
			}
		}
	}
	if over > 0 {
		t.Errorf("%d of %d requests over the budget", over, len(reqs))
	}
	if len(m.byStep) != steps {
		t.Fatalf("%d steps asked for; want %d", len(m.byStep), steps)
	}

	conds := b.rec.ofType(drydock.EventCondensation)
	var masks int
	for _, e := range b.rec.ofType(drydock.EventLog) {
		if strings.Contains(string(e.Data), `"kind":"`+transcript.KindMask+`"`) {
			masks++
		}
	}
	if len(conds) < steps/50 || masks == 0 {
		t.Errorf("%d condensations and %d masks in %d steps", len(conds), masks, steps)
	}
	for i, e := range conds {
		var c transcript.Condensation
		if err := json.Unmarshal(e.Data, &c); err != nil {
			t.Fatal(err)
		}
		if c.Kind != transcript.KindSummary || c.Depth != i || !strings.HasPrefix(c.Summary, "Summary of steps 1 to "+strconv.Itoa(c.ThroughStep)) {
			t.Errorf("condensation %d: %+v", i, c)
			break
		}
	}
	// Summary requests made in the conversation offer the steps' tools
	// unchanged (the cache's prefix) and, where the API can forbid calls
	// without losing the cache (OpenAI's tool_choice), forbid them.
	inConv := 0
	for _, r := range reqs {
		if !isSummary(r) || len(r.Tools) == 0 {
			continue
		}
		inConv++
		if first := m.byStep[1]; !reflect.DeepEqual(r.Tools, first.Tools) || r.System != first.System {
			t.Errorf("summary request %d: its tools or system prompt differ from the steps'", r.N)
		}
		if want := map[string]string{"openai": `"none"`}[api]; r.ToolChoice != want {
			t.Errorf("summary request %d: tool_choice %s; want %q", r.N, r.ToolChoice, want)
		}
	}
	if inConv == 0 {
		t.Errorf("no summary request was made in the conversation")
	}
	t.Logf("%s: %d of %d summary requests made in the conversation", api, inConv, m.summaries)
	if m.summaries != len(conds) {
		t.Errorf("%d summary requests for %d condensations", m.summaries, len(conds))
	}

	// The needle: printed in the sandbox, gone from the prompt before the
	// recall, in the result the model reads after it.
	if m.needle == "" {
		t.Fatal("the launch code never reached the model")
	}
	if before := m.byStep[m.recallStep]; strings.Contains(string(before.Body), m.needle) {
		t.Errorf("the launch code is still in the prompt at step %d; recall proves nothing", m.recallStep)
	}
	after := m.byStep[m.recallStep+1].LastUser()
	if len(after.ToolResults) != 1 || !strings.Contains(after.ToolResults[0].Output, m.needle) || !strings.Contains(after.ToolResults[0].Output, "step 10, bash result") {
		t.Errorf("the recall result the model received lacks the launch code %s:\n%+v", m.needle, after.ToolResults)
	}

	// Each periodic recall found its step's output.
	var lat []time.Duration
	var called time.Time
	for _, e := range b.rec.Events() {
		switch e.Type {
		case drydock.EventToolCall:
			called = e.Time
		case drydock.EventObservation:
			var o transcript.Observation
			if json.Unmarshal(e.Data, &o) != nil || o.Name != "recall" {
				continue
			}
			lat = append(lat, e.Time.Sub(called))
			if o.Step != m.recallStep && !strings.Contains(o.Output, fmt.Sprintf("step %d line 7: lorem", o.Step-40)) {
				t.Errorf("recall at step %d missed step %d's output:\n%s", o.Step, o.Step-40, o.Output)
			}
		}
	}
	slices.Sort(lat)

	fig := measure(t, b, reqs, m)
	// The stable prefix changes rarely: most of each prompt is read from
	// the provider's cache (Anthropic's at the provider's breakpoints,
	// OpenAI's automatic one), as the model server plays them.
	if fig.cacheRead < 0.7 {
		t.Errorf("%.1f%% of the prompt tokens read from the cache; want at least 70%%", 100*fig.cacheRead)
	}
	t.Logf("%s: %d steps in %s (%.1f ms/step); %d condensations, %d masks; prefix shared with the previous request %.1f%%, cache reads %.1f%%, writes %.1f%%; prompt tokens p50 %d, max %d; naive at the end %d; %d recalls, latency p50 %s, p95 %s, max %s",
		api, steps, elapsed.Round(time.Millisecond), float64(elapsed.Milliseconds())/float64(steps), len(conds), masks, 100*fig.hitRatio, 100*fig.cacheRead, 100*fig.cacheWrite, fig.p50, fig.max, fig.naiveLast,
		len(lat), lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)*95/100].Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
}

// figures are what the benchmark reports of a long run.
type figures struct {
	hitRatio, cacheRead, cacheWrite float64
	p50, max, naiveLast             int
}

// measure computes the long run's figures and, with DRYDOCK_TEST_FIGURES
// set, logs a table of prompt sizes every tenth of the run against the
// naive prompt (the whole history), for docs/BENCHMARKS.md.
func measure(t *testing.T, b *bundle, reqs []*llmtest.Request, m *longRun) figures {
	var f figures
	var sizes []int
	var hit, total int64
	var prev *llmtest.Request
	for _, r := range reqs {
		if isSummary(r) {
			continue // summary requests are counted apart
		}
		sizes = append(sizes, int(promptTokens(r)))
		s, n := prefix(prev, r)
		hit, total = hit+int64(s), total+int64(n)
		prev = r
	}
	f.hitRatio = float64(hit) / float64(total)
	// The cache figures are the steps' usage as the agent recorded it, so
	// the provider's parsing of the server's usage fields is in the path;
	// they must add up to what the server sent.
	var read, write, all, served int64
	for _, r := range reqs {
		if !isSummary(r) {
			served += r.Answer.Usage.CacheReadTokens
		}
	}
	for _, u := range usages(t, b) {
		n := func(k string) int64 { v, _ := u[k].(float64); return int64(v) }
		read, write, all = read+n("cache_read_tokens"), write+n("cache_write_tokens"), all+n("input_tokens")+n("cache_read_tokens")+n("cache_write_tokens")
	}
	if read != served {
		t.Errorf("the agent recorded %d cache reads; the server reported %d", read, served)
	}
	f.cacheRead, f.cacheWrite = float64(read)/float64(all), float64(write)/float64(all)
	sorted := append([]int(nil), sizes...)
	slices.Sort(sorted)
	f.p50, f.max = sorted[len(sorted)/2], sorted[len(sorted)-1]

	// The naive prompt: the whole conversation up to a step, counted with
	// the same counter and scaled like the provider's count.
	counter := tokens.For(b.api, b.model)
	events := b.rec.Events()
	naiveAt := func(step int) int {
		var upto []*drydock.Event
		for _, e := range events {
			if e.Type == drydock.EventModel {
				var mt transcript.ModelTurn
				if json.Unmarshal(e.Data, &mt) == nil && mt.Step >= step {
					break
				}
			}
			upto = append(upto, e)
		}
		r := m.byStep[step]
		msgs := transcript.Messages(upto, transcript.Options{Task: "Your task:\n\n" + "Run the scripted steps."})
		full := tokens.Request(counter, &llm.Request{System: r.System, Tools: r.Tools, Messages: msgs})
		own := tokens.Request(counter, &llm.Request{System: r.System, Tools: r.Tools, Messages: r.Messages})
		return int(float64(full) * float64(promptTokens(r)) / float64(own))
	}
	f.naiveLast = naiveAt(m.steps)
	if os.Getenv("DRYDOCK_TEST_FIGURES") != "" {
		var rows []string
		var sent, naiveSent int64
		for step := 1; step <= m.steps; step++ {
			sent += promptTokens(m.byStep[step])
		}
		// Each tenth of the run: the smallest and largest budgeted prompt
		// (the prompt cycles between condensations, so one sample per tenth
		// can land on the same phase every time) and the naive one at its
		// end.
		for k := 1; k <= 10; k++ {
			lo, hi := int64(math.MaxInt64), int64(0)
			for step := m.steps*(k-1)/10 + 1; step <= m.steps*k/10; step++ {
				lo, hi = min(lo, promptTokens(m.byStep[step])), max(hi, promptTokens(m.byStep[step]))
			}
			step := m.steps * k / 10
			rows = append(rows, fmt.Sprintf("| %d | %d–%d | %d |", step, lo, hi, naiveAt(step)))
		}
		// The naive total grows as the sum of a line: sampled every step it
		// costs a tokenization of the whole history each time, so it is
		// integrated from the samples.
		last := 0
		for k := 1; k <= 10; k++ {
			step := m.steps * k / 10
			n := naiveAt(step)
			naiveSent += int64(step-last) * int64(n+naiveAt(max(last, 1))) / 2
			last = step
		}
		// Condensation requests against the whole run, in tokens of the
		// prompt (cached or not) and in dollars at the model's prices.
		var condIn, condOut, condRead, allIn, allRead int64
		var condCost, allCost float64
		for _, e := range b.rec.ofType(drydock.EventUsage) {
			var u struct {
				drydock.Usage
				Kind string `json:"kind"`
			}
			if json.Unmarshal(e.Data, &u) != nil {
				continue
			}
			allCost += u.CostUSD
			allIn += u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
			allRead += u.CacheReadTokens
			if u.Kind == "condensation" {
				condIn += u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
				condRead += u.CacheReadTokens
				condOut += u.OutputTokens
				condCost += u.CostUSD
			}
		}
		t.Logf("%s prompt tokens by step (provider's count):\n| steps up to | budgeted, min–max | naive at the end |\n|---|---|---|\n%s\ntotal input sent: %d budgeted vs about %d naive; condensations cost %d input (%.1f%% of all input, %.1f%% of it read from the cache) + %d output tokens, $%.2f of the run's $%.2f (%.1f%%); all requests: %.1f%% of the input read from the cache",
			b.api, strings.Join(rows, "\n"), sent, naiveSent, condIn, 100*float64(condIn)/float64(allIn), 100*float64(condRead)/float64(max(condIn, 1)), condOut, condCost, allCost, 100*condCost/allCost, 100*float64(allRead)/float64(allIn))
	}
	return f
}

// prefix measures what a prompt cache could reuse of r after prev: the
// tools, the system prompt and the messages both share from the start,
// against r's size, in bytes of a canonical encoding (the provider's
// tokens are in proportion).
func prefix(prev, r *llmtest.Request) (shared, total int) {
	size := func(v any) int {
		b, _ := json.Marshal(v)
		return len(b)
	}
	fixed := size(r.System) + size(r.Tools)
	total = fixed
	for _, m := range r.Messages {
		total += size(m)
	}
	if prev == nil || prev.System != r.System || size(prev.Tools) != size(r.Tools) {
		return 0, total
	}
	shared = fixed
	for i := range min(len(prev.Messages), len(r.Messages)) {
		a, b := size(prev.Messages[i]), size(r.Messages[i])
		if a != b {
			break
		}
		if x, y := mustJSON(prev.Messages[i]), mustJSON(r.Messages[i]); x != y {
			break
		}
		shared += b
	}
	return shared, total
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// usages decodes the usage events of steps (not of summaries).
func usages(t *testing.T, b *bundle) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range b.rec.ofType(drydock.EventUsage) {
		var u map[string]any
		if err := json.Unmarshal(e.Data, &u); err != nil {
			t.Fatal(err)
		}
		if u["kind"] == nil {
			out = append(out, u)
		}
	}
	return out
}

// The budget: the model's window less the reply's room (its thinking
// budget included: Claude Sonnet 4.5 thinks with 4096 tokens by default),
// unless the configuration or the job's context_budget set one (never past
// the window).
func TestContextBudgetSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cfg, job int
		want     int
	}{
		{"default", 0, 0, 200_000 - 8192 - 4096},
		{"config", 50_000, 0, 50_000},
		{"job", 50_000, 9000, 9000},
		{"past the window", 0, 900_000, 200_000 - 8192 - 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, agent.ProviderAnthropic, llmtest.Options{Turns: []llmtest.Turn{finish("done")}}, agent.Config{ContextBudget: tt.cfg})
			j := job("Do it.")
			j.ContextBudget = tt.job
			if _, err := b.run(t.Context(), j, nil); err != nil {
				t.Fatal(err)
			}
			u := usages(t, b)
			if len(u) != 1 || u[0]["context_budget"] != float64(tt.want) {
				t.Errorf("usage %v; want context_budget %d", u, tt.want)
			}
			if c, e := u[0]["prompt_counted"].(float64), u[0]["prompt_estimate"].(float64); c < 2000 || e != c {
				t.Errorf("first request counted %v, estimated %v: want equal (nothing to calibrate with yet)", c, e)
			}
		})
	}
	// A job that skipped the API's checks is still refused with the bounds.
	for _, bad := range []int{100, -5, 2_000_000} {
		b := setup(t, agent.ProviderOpenAI, llmtest.Options{}, agent.Config{})
		j := job("Do it.")
		j.ContextBudget = bad
		_, err := b.run(t.Context(), j, nil)
		if drydock.ErrorCode(err) != drydock.EINVALID {
			t.Fatalf("context_budget %d: %v", bad, err)
		}
		contains(t, "error", drydock.ErrorMessage(err), "context_budget must be between 4000 and 1000000 tokens")
	}
	if _, err := agent.New(agent.Config{ContextBudget: 100}, nil); drydock.ErrorCode(err) != drydock.EINVALID {
		t.Errorf("config budget 100: %v", err)
	}
}

// Under a small budget, outputs are cut at ingest to a share of it (the
// whole output saved and named), and the next request still fits.
func TestSmallBudgetCutsLongOutputsAtIngest(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{Turns: []llmtest.Turn{
		{ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "seq 1 4000 | sed 's/^/row /'"})}},
		finish("looked"),
	}}, agent.Config{})
	j := job("Look.")
	j.ContextBudget = 8000
	if _, err := b.run(t.Context(), j, nil); err != nil {
		t.Fatal(err)
	}
	o := b.rec.observations(t)[0]
	if !o.Truncated || o.OutputPath == "" || len(o.Output) > 6000 || len(o.Output) < 2000 {
		t.Fatalf("observation of %d bytes, truncated %v, path %q", len(o.Output), o.Truncated, o.OutputPath)
	}
	contains(t, "observation", o.Output, "row 1\n", "row 4000", "the whole output is in ", o.OutputPath)
	contains(t, "saved output", b.file(t, o.OutputPath), "row 2000\n")
	for _, r := range b.srv.Requests() {
		if n := promptTokens(r); n > 8000 {
			t.Errorf("request %d: %d tokens", r.N, n)
		}
	}
}

// A run cut short after condensations resumes with the same prompt it
// would have sent: the summary, the masks and the calibration all come back
// from the log.
func TestResumeAfterCondensations(t *testing.T) {
	t.Parallel()
	apis(t, func(t *testing.T, api string) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		m := &longRun{steps: 1000, needleStep: -1, recallStep: -1, byStep: map[int]*llmtest.Request{}}
		const stop = 60
		b := setup(t, api, llmtest.Options{Func: func(r *llmtest.Request) llmtest.Turn {
			if !isSummary(r) && len(m.byStep) == stop-1 {
				m.mu.Lock()
				m.byStep[stop] = r
				m.mu.Unlock()
				cancel() // the orchestrator goes away while the model thinks
				return llmtest.Turn{Text: "never seen", Delay: time.Minute}
			}
			return m.answer(r)
		}}, agent.Config{MaxSteps: 200})
		j := job("Run the scripted steps.")
		j.ContextBudget = 6000
		if _, err := b.run(ctx, j, nil); ctx.Err() == nil || err == nil {
			t.Fatalf("first run: %v", err)
		}
		history := b.rec.Events()
		if n := len(b.rec.ofType(drydock.EventCondensation)); n < 2 {
			t.Fatalf("%d condensations before the restart", n)
		}
		want := m.byStep[stop]

		srv2 := llmtest.NewServer(t, llmtest.Options{APIKey: llmtest.TestKey, Turns: []llmtest.Turn{finish("resumed")}})
		base := srv2.OpenAIBaseURL()
		if api == agent.ProviderAnthropic {
			base = srv2.AnthropicBaseURL()
		}
		a2, err := agent.New(agent.Config{Provider: api, Model: b.model, APIKey: llmtest.TestKey, BaseURL: base, MaxSteps: 200}, nil)
		if err != nil {
			t.Fatal(err)
		}
		b.agent = a2
		if _, err := b.run(t.Context(), j, history); err != nil {
			t.Fatal(err)
		}
		got := srv2.Requests()[0]
		if diff := cmp.Diff(want.Messages, got.Messages); diff != "" {
			t.Errorf("resumed prompt (-before the restart +after):\n%s", diff)
		}
		if len(b.rec.Events()) == len(history) {
			t.Fatal("the resumed run recorded nothing")
		}
		// The estimate of the resumed run's first request used the
		// calibration the first run had reached.
		u := usages(t, b)
		last, first := u[len(u)-2], u[len(u)-1]
		if c, e := first["prompt_counted"].(float64), first["prompt_estimate"].(float64); e == c || e/c < 0.9*last["prompt_estimate"].(float64)/last["prompt_counted"].(float64) {
			t.Errorf("resumed estimate %v for a count of %v; before the restart the ratio was %v", e, c, last["prompt_estimate"].(float64)/last["prompt_counted"].(float64))
		}
	})
}
