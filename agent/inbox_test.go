package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// post stores a person's message in the recorder's log, as the API does.
func (r *recorder) post(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := drydock.NewEvent("job-1", drydock.EventUserMessage, drydock.UserMessage{Text: text, From: "ci"})
	ev.Seq = int64(len(r.events) + 1)
	ev.Time = time.Now()
	r.events = append(r.events, ev)
}

// inbox is the runner's Inbox over the recorder's log.
func (r *recorder) inbox(_ context.Context, after int64) ([]*drydock.Event, error) {
	var out []*drydock.Event
	for _, e := range r.Events() {
		if e.Seq > after && e.Type == drydock.EventUserMessage {
			out = append(out, e)
		}
	}
	return out, nil
}

// delivered returns the seqs of the messages the agent marked delivered.
func (r *recorder) delivered(t *testing.T) []int64 {
	t.Helper()
	var seqs []int64
	for _, e := range r.ofType(drydock.EventLog) {
		var n struct {
			Kind string `json:"kind"`
			Seq  int64  `json:"seq"`
		}
		if err := json.Unmarshal(e.Data, &n); err != nil {
			t.Fatal(err)
		}
		if n.Kind == drydock.LogMessageDelivered {
			seqs = append(seqs, n.Seq)
		}
	}
	return seqs
}

// asks records what the agent shows as the job's waiting_for.
type asks struct {
	mu  sync.Mutex
	log []string
}

func (a *asks) ask(_ context.Context, q string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.log = append(a.log, q)
	return nil
}

func (a *asks) got() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.log...)
}

// runWith runs the agent with the recorder's inbox and, when given, ask.
func (b *bundle) runWith(ctx context.Context, j *drydock.Job, history []*drydock.Event, ask func(context.Context, string) error) (*drydock.AgentOutcome, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return b.agent.Run(ctx, &drydock.AgentRun{
		Job: j, Sandbox: b.sb, Events: b.rec, History: history,
		Progress: func(context.Context, int, drydock.Usage) error { return nil },
		Inbox:    b.rec.inbox,
		Ask:      ask,
	})
}

// mentions counts how often the prompt of req carries text.
func mentions(req *llmtest.Request, text string) int {
	n := 0
	for _, m := range req.Messages {
		n += strings.Count(m.Text, text)
		for _, r := range m.ToolResults {
			n += strings.Count(r.Output, text)
		}
	}
	return n
}

func bash(cmd string) llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": cmd})}}
}

// A message stored while a tool runs reaches the model in the very next
// request, as a user turn after the tool's result, and only once in every
// prompt from then on.
func TestMessageDuringToolCallIsDeliveredOnce(t *testing.T) {
	t.Parallel()
	apis(t, func(t *testing.T, api string) {
		const msg = "Use Postgres, not SQLite."
		b := setup(t, api, llmtest.Options{Turns: []llmtest.Turn{
			bash("echo working"),
			{Text: "Understood: Postgres it is.", ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "echo postgres"})}},
			finish("switched to Postgres"),
		}}, agent.Config{})
		rec := &hookRecorder{recorder: b.rec, onToolCall: func() { b.rec.post(msg) }}
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		out, err := b.agent.Run(ctx, &drydock.AgentRun{
			Job: job("Build the store."), Sandbox: b.sb, Events: rec,
			Progress: func(context.Context, int, drydock.Usage) error { return nil },
			Inbox:    b.rec.inbox,
		})
		if err != nil || out.Summary != "switched to Postgres" {
			t.Fatalf("run: %+v %v", out, err)
		}
		reqs := b.srv.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%d requests; want 3", len(reqs))
		}
		if n := mentions(reqs[0], msg); n != 0 {
			t.Errorf("the first request, sent before the message, carries it %d times", n)
		}
		last := reqs[1].LastUser()
		if len(last.ToolResults) != 1 || !strings.Contains(last.ToolResults[0].Output, "working") {
			t.Errorf("request 2's user turn lacks step 1's result: %+v", last)
		}
		contains(t, "request 2's user turn", last.Text, "Message from the user:", msg)
		for i, r := range reqs[1:] {
			if n := mentions(r, msg); n != 1 {
				t.Errorf("request %d carries the message %d times; want once", i+2, n)
			}
		}
		if got := b.rec.delivered(t); len(got) != 1 {
			t.Errorf("delivery marks for seqs %v; want one", got)
		}
	})
}

// hookRecorder calls onToolCall once, when the first tool call is
// recorded: a message that arrives while a tool runs.
type hookRecorder struct {
	*recorder
	once       sync.Once
	onToolCall func()
}

func (h *hookRecorder) Emit(ctx context.Context, typ drydock.EventType, data any) error {
	err := h.recorder.Emit(ctx, typ, data)
	if typ == drydock.EventToolCall {
		h.once.Do(h.onToolCall)
	}
	return err
}

// A message stored before the agent starts joins the task in the first
// request.
func TestMessageBeforeStartJoinsTheTask(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{Turns: []llmtest.Turn{finish("done")}}, agent.Config{})
	b.rec.post("Write it in Go.")
	if _, err := b.runWith(t.Context(), job("Write a hello world."), b.rec.Events(), nil); err != nil {
		t.Fatal(err)
	}
	first := b.srv.Requests()[0]
	if len(first.Messages) != 1 {
		t.Fatalf("first request has %d messages; want the task alone", len(first.Messages))
	}
	contains(t, "the first user turn", first.Messages[0].Text, "Write a hello world.", "Message from the user:\n\nWrite it in Go.")
}

// The orchestrator dies while the model answers the request that carried a
// message: the resumed run shows it at the same place and does not deliver
// it again, while a message that came during the outage (stored, never
// marked) is delivered once.
func TestMessageDeliveredOnceAcrossResume(t *testing.T) {
	t.Parallel()
	apis(t, func(t *testing.T, api string) {
		const first, second = "First: use Postgres.", "Second: and add tests."
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		b := setup(t, api, llmtest.Options{Func: func(r *llmtest.Request) llmtest.Turn {
			if r.N == 1 {
				return bash("echo one")
			}
			cancel() // the orchestrator goes away while the model thinks
			return llmtest.Turn{Text: "never seen", Delay: time.Minute}
		}}, agent.Config{})
		rec := &hookRecorder{recorder: b.rec, onToolCall: func() { b.rec.post(first) }}
		_, err := b.agent.Run(ctx, &drydock.AgentRun{
			Job: job("Build the store."), Sandbox: b.sb, Events: rec,
			Progress: func(context.Context, int, drydock.Usage) error { return nil },
			Inbox:    b.rec.inbox,
		})
		if ctx.Err() == nil || err == nil {
			t.Fatalf("first run: %v", err)
		}
		cut := b.srv.Requests()[1]
		if n := mentions(cut, first); n != 1 {
			t.Fatalf("the request cut short carried the first message %d times", n)
		}
		b.rec.post(second) // during the outage
		history := b.rec.Events()

		srv2 := llmtest.NewServer(t, llmtest.Options{APIKey: llmtest.TestKey, Turns: []llmtest.Turn{finish("done")}})
		base := srv2.OpenAIBaseURL()
		if api == agent.ProviderAnthropic {
			base = srv2.AnthropicBaseURL()
		}
		a2, err := agent.New(agent.Config{Provider: api, Model: b.model, APIKey: llmtest.TestKey, BaseURL: base}, nil)
		if err != nil {
			t.Fatal(err)
		}
		b.agent = a2
		if _, err := b.runWith(t.Context(), job("Build the store."), history, nil); err != nil {
			t.Fatal(err)
		}
		resumed := srv2.Requests()[0]
		if n := mentions(resumed, first); n != 1 {
			t.Errorf("the resumed prompt carries the first message %d times; want once", n)
		}
		if n := mentions(resumed, second); n != 1 {
			t.Errorf("the resumed prompt carries the second message %d times; want once", n)
		}
		if len(resumed.Messages) != len(cut.Messages) {
			t.Fatalf("resumed prompt has %d messages, the cut one %d: the conversation changed shape", len(resumed.Messages), len(cut.Messages))
		}
		lastCut, lastResumed := cut.LastUser().Text, resumed.LastUser().Text
		if !strings.HasPrefix(lastResumed, lastCut) || !strings.Contains(lastResumed[len(lastCut):], second) {
			t.Errorf("the resumed user turn %q should be the cut one %q plus the second message", lastResumed, lastCut)
		}
		if got := b.rec.delivered(t); len(got) != 2 || got[0] == got[1] {
			t.Errorf("delivery marks for seqs %v; want one per message", got)
		}
	})
}

// ask_user on an interactive job shows the question as waiting_for,
// returns when a message arrives, and the message reaches the model once,
// right after the tool's result; the question is cleared.
func TestAskUserAnswered(t *testing.T) {
	t.Parallel()
	apis(t, func(t *testing.T, api string) {
		b := setup(t, api, llmtest.Options{Turns: []llmtest.Turn{
			{ToolCalls: []llm.ToolCall{call("ask_user", map[string]string{"question": "Postgres or SQLite?"})}},
			finish("used Postgres"),
		}}, agent.Config{})
		var a asks
		ask := func(ctx context.Context, q string) error {
			a.ask(ctx, q)
			if q != "" {
				b.rec.post("Postgres, please.") // the person answers at once
			}
			return nil
		}
		j := job("Pick a database.")
		j.Interactive = true
		if _, err := b.runWith(t.Context(), j, nil, ask); err != nil {
			t.Fatal(err)
		}
		reqs := b.srv.Requests()
		contains(t, "tools offered", strings.Join(reqs[0].ToolNames(), ","), "ask_user")
		contains(t, "system prompt", reqs[0].System, "ask_user")
		if got := a.got(); len(got) != 2 || got[0] != "Postgres or SQLite?" || got[1] != "" {
			t.Errorf("waiting_for went %q; want the question, then cleared", got)
		}
		last := reqs[1].LastUser()
		if len(last.ToolResults) != 1 || !strings.Contains(last.ToolResults[0].Output, "The user answered") {
			t.Errorf("ask_user's result %+v", last.ToolResults)
		}
		contains(t, "the answer's user turn", last.Text, "Message from the user:\n\nPostgres, please.")
		if n := mentions(reqs[1], "Postgres, please."); n != 1 {
			t.Errorf("the answer is in the prompt %d times; want once", n)
		}
		var asked bool
		for _, e := range b.rec.ofType(drydock.EventLog) {
			asked = asked || strings.Contains(string(e.Data), `"kind":"ask_user"`)
		}
		if !asked {
			t.Error("no ask_user event in the log")
		}
	})
}

// Nobody answers: ask_user returns after the timeout with a note saying
// so, and clears the question.
func TestAskUserTimesOut(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{Turns: []llmtest.Turn{
		{ToolCalls: []llm.ToolCall{call("ask_user", map[string]string{"question": "Which port?"})}},
		finish("used 8080"),
	}}, agent.Config{AskTimeout: 50 * time.Millisecond})
	var a asks
	j := job("Serve it.")
	j.Interactive = true
	if _, err := b.runWith(t.Context(), j, nil, a.ask); err != nil {
		t.Fatal(err)
	}
	r := b.srv.Requests()[1].LastUser().ToolResults
	if len(r) != 1 || r[0].IsError || !strings.Contains(r[0].Output, "Nobody answered within 50ms") {
		t.Errorf("ask_user's result %+v; want the timeout note", r)
	}
	if got := a.got(); len(got) != 2 || got[1] != "" {
		t.Errorf("waiting_for went %q; want the question, then cleared", got)
	}
}

// Without interactive the tool is not offered and the system prompt says
// nobody answers; a job's stale waiting_for is not touched either.
func TestAskUserNotOfferedWithoutInteractive(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{Turns: []llmtest.Turn{finish("done")}}, agent.Config{})
	var a asks
	if _, err := b.runWith(t.Context(), job("Do it."), nil, a.ask); err != nil {
		t.Fatal(err)
	}
	first := b.srv.Requests()[0]
	if names := strings.Join(first.ToolNames(), ","); strings.Contains(names, "ask_user") {
		t.Errorf("tools offered %s; a job that is not interactive gets no ask_user", names)
	}
	contains(t, "system prompt", first.System, "Nobody answers questions")
	if strings.Contains(first.System, "ask_user") {
		t.Error("the system prompt of a job that is not interactive mentions ask_user")
	}
	if got := a.got(); len(got) != 0 {
		t.Errorf("waiting_for set to %q", got)
	}
}

// A run resumed after a restart during ask_user clears the question the
// previous run left on the job.
func TestResumeClearsStaleQuestion(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{Turns: []llmtest.Turn{finish("done")}}, agent.Config{})
	var a asks
	j := job("Do it.")
	j.Interactive, j.WaitingFor = true, "Which port?"
	if _, err := b.runWith(t.Context(), j, nil, a.ask); err != nil {
		t.Fatal(err)
	}
	if got := a.got(); len(got) != 1 || got[0] != "" {
		t.Errorf("waiting_for went %q; want it cleared", got)
	}
}

// A message stored while the model is answering is delivered before the
// next model call, once.
func TestMessageDuringModelCallIsDeliveredNext(t *testing.T) {
	t.Parallel()
	const msg = "Also write a README."
	var rec *recorder
	b := setup(t, agent.ProviderAnthropic, llmtest.Options{Func: func(r *llmtest.Request) llmtest.Turn {
		switch r.N {
		case 1:
			rec.post(msg) // the person types while the model thinks
			return bash("echo one")
		case 2:
			return bash("echo two")
		}
		return finish("done")
	}}, agent.Config{})
	rec = b.rec
	if _, err := b.runWith(t.Context(), job("Write code."), nil, nil); err != nil {
		t.Fatal(err)
	}
	reqs := b.srv.Requests()
	if n := mentions(reqs[0], msg); n != 0 {
		t.Errorf("request 1 carries the message %d times", n)
	}
	contains(t, "request 2's user turn", reqs[1].LastUser().Text, msg)
	for i, r := range reqs[1:] {
		if n := mentions(r, msg); n != 1 {
			t.Errorf("request %d carries the message %d times; want once", i+2, n)
		}
	}
	if got := b.rec.delivered(t); len(got) != 1 {
		t.Errorf("delivery marks %v; want one", got)
	}
}

// A follow-up's prior events are its ancestors', numbered in their logs:
// a message to the follow-up arrives with a number of the follow-up's own
// log, lower than the parent's last, and still reaches the next request,
// once; the parent's own messages are not delivered again.
func TestMessageToAFollowUpIsDelivered(t *testing.T) {
	t.Parallel()
	const old, msg = "Parent's message.", "Use Postgres in the follow-up."
	parent := setup(t, agent.ProviderOpenAI, llmtest.Options{Turns: []llmtest.Turn{
		bash("echo a"), bash("echo b"), bash("echo c"), finish("parent done"),
	}}, agent.Config{})
	parent.rec.post(old)
	pj := job("Write notes.")
	if _, err := parent.runWith(t.Context(), pj, nil, nil); err != nil {
		t.Fatal(err)
	}
	prior := priorOf(pj.ID, pj.Task, parent.rec.Events())
	if last := prior[len(prior)-1].Seq; last < 5 {
		t.Fatalf("the parent's log ends at %d; the test needs it past the follow-up's first events", last)
	}
	b := newBundle(t, parent.sb, agent.ProviderOpenAI, llmtest.Options{Turns: []llmtest.Turn{
		bash("echo working"), finish("switched"),
	}}, agent.Config{})
	rec := &hookRecorder{recorder: b.rec, onToolCall: func() { b.rec.post(msg) }}
	cj := &drydock.Job{ID: "job-1", Status: drydock.StatusRunning, ParentJobID: pj.ID, JobSpec: drydock.JobSpec{Task: "Go on."}}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if _, err := b.agent.Run(ctx, &drydock.AgentRun{Job: cj, Sandbox: b.sb, Events: rec, Prior: prior,
		Progress: func(context.Context, int, drydock.Usage) error { return nil }, Inbox: b.rec.inbox}); err != nil {
		t.Fatal(err)
	}
	reqs := b.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests; want 2", len(reqs))
	}
	if n := mentions(reqs[1], msg); n != 1 {
		t.Errorf("the request after the message carries it %d times; want once", n)
	}
	if n := mentions(reqs[0], old); n != 1 {
		t.Errorf("the parent's message is %d times in the follow-up's first prompt; want once (as the parent's conversation)", n)
	}
	if got := b.rec.delivered(t); len(got) != 1 {
		t.Errorf("the follow-up marked %v delivered; want its one message", got)
	}
}
