package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
	"github.com/drydockhq/drydock/runtime/local"
	"github.com/drydockhq/drydock/toolbox"
)

// recorder is the job's event log and progress, as the runner would keep
// them.
type recorder struct {
	mu       sync.Mutex
	events   []*drydock.Event
	progress []progress
}

type progress struct {
	steps int
	usage drydock.Usage
}

func (r *recorder) Emit(ctx context.Context, typ drydock.EventType, data any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := drydock.NewEvent("job-1", typ, data)
	// Every event the agent writes is its kind's type exactly: an error
	// here fails the run, and so the test that made it.
	if err := drydock.CheckEventData(typ, ev.Data); err != nil {
		return err
	}
	ev.Seq = int64(len(r.events) + 1)
	ev.Time = time.Now()
	r.events = append(r.events, ev)
	return nil
}

func (r *recorder) Events() []*drydock.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*drydock.Event(nil), r.events...)
}

func (r *recorder) ofType(typ drydock.EventType) []*drydock.Event {
	var out []*drydock.Event
	for _, e := range r.Events() {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// observations decodes the observation events.
func (r *recorder) observations(t *testing.T) []transcript.Observation {
	t.Helper()
	var out []transcript.Observation
	for _, e := range r.ofType(drydock.EventObservation) {
		var o transcript.Observation
		if err := json.Unmarshal(e.Data, &o); err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

// bundle is a real sandbox, the scripted model server and an agent wired
// to it through the production provider.
type bundle struct {
	api   string
	model string
	rt    *local.Runtime // nil in a container engine's sandbox
	sb    *drydock.Sandbox
	ws    string // the local sandbox's workspace
	srv   *llmtest.Server
	agent *agent.Agent
	rec   *recorder
}

// apis runs f once per provider.
func apis(t *testing.T, f func(t *testing.T, api string)) {
	for _, api := range []string{agent.ProviderOpenAI, agent.ProviderAnthropic} {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			f(t, api)
		})
	}
}

// setup is a bundle in a local sandbox (an in-process toolboxd).
func setup(t *testing.T, api string, opts llmtest.Options, cfg agent.Config) *bundle {
	t.Helper()
	rt, err := local.New(local.Options{Root: t.TempDir(), ServerID: "agent-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	sb, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "job-1"})
	if err != nil {
		t.Fatal(err)
	}
	box := toolbox.New(sb.Endpoint, sb.Token)
	defer box.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := box.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	b := newBundle(t, sb, api, opts, cfg)
	b.rt, b.ws = rt, rt.Workspace(sb.ID)
	return b
}

// newBundle wires an agent for sandbox sb to a new scripted model server
// through the production provider for api.
func newBundle(t *testing.T, sb *drydock.Sandbox, api string, opts llmtest.Options, cfg agent.Config) *bundle {
	t.Helper()
	if opts.APIKey == "" {
		opts.APIKey = llmtest.TestKey
	}
	srv := llmtest.NewServer(t, opts)
	cfg.Provider = api
	if cfg.APIKey == "" {
		cfg.APIKey = llmtest.TestKey
	}
	model := "gpt-4.1"
	cfg.BaseURL = srv.OpenAIBaseURL()
	if api == agent.ProviderAnthropic {
		model = "claude-sonnet-4-5"
		cfg.BaseURL = srv.AnthropicBaseURL()
	}
	if cfg.Model == "" {
		cfg.Model = model
	}
	a, err := agent.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	return &bundle{api: api, model: cfg.Model, sb: sb, srv: srv, agent: a, rec: &recorder{}}
}

func job(task string) *drydock.Job {
	return &drydock.Job{ID: "job-1", Status: drydock.StatusRunning, JobSpec: drydock.JobSpec{Task: task}}
}

// run runs the agent on the job with the given history, recording into
// b.rec.
func (b *bundle) run(ctx context.Context, j *drydock.Job, history []*drydock.Event) (*drydock.AgentOutcome, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return b.agent.Run(ctx, &drydock.AgentRun{
		Job:     j,
		Sandbox: b.sb,
		Events:  b.rec,
		History: history,
		Progress: func(ctx context.Context, steps int, usage drydock.Usage) error {
			b.rec.mu.Lock()
			defer b.rec.mu.Unlock()
			b.rec.progress = append(b.rec.progress, progress{steps, usage})
			return nil
		},
	})
}

func (b *bundle) file(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.ws, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func call(name string, input any) llm.ToolCall {
	data, _ := json.Marshal(input)
	return llm.ToolCall{Name: name, Input: data}
}

func finish(summary string) llmtest.Turn {
	return llmtest.Turn{Text: "All done.", ToolCalls: []llm.ToolCall{call("finish", map[string]string{"summary": summary})}}
}

func contains(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			shown := s
			if len(shown) > 600 {
				shown = shown[:300] + " ... " + shown[len(shown)-300:]
			}
			t.Errorf("%s %q lacks %q", what, shown, sub)
		}
	}
}

// The seed's example, end to end with each provider: a shell command
// creates a file, the editor changes it, finish ends the job.
func TestSmallTask(t *testing.T) {
	t.Parallel()
	apis(t, func(t *testing.T, api string) {
		b := setup(t, api, llmtest.Options{Turns: []llmtest.Turn{
			{Text: "I will create the file.", ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "printf 'hello world\\n' > hello.txt && cat hello.txt"})}},
			{ToolCalls: []llm.ToolCall{call("str_replace_based_edit_tool", map[string]string{"command": "str_replace", "path": "hello.txt", "old_str": "world", "new_str": "drydock"})}},
			finish("Created hello.txt with the text `hello drydock`."),
		}}, agent.Config{})
		out, err := b.run(t.Context(), job("Create a file named hello.txt and put the text `hello world` inside it, then change world to drydock."), nil)
		if err != nil {
			t.Fatal(err)
		}
		if out.Summary != "Created hello.txt with the text `hello drydock`." {
			t.Errorf("summary %q", out.Summary)
		}
		if got := b.file(t, "hello.txt"); got != "hello drydock\n" {
			t.Errorf("hello.txt = %q", got)
		}

		reqs := b.srv.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%d requests; want 3", len(reqs))
		}
		first := reqs[0]
		contains(t, "system prompt", first.System, "Workspace: ", "finish", "str_replace_based_edit_tool")
		contains(t, "task", first.Messages[0].Text, "Create a file named hello.txt")
		if got := strings.Join(first.ToolNames(), ","); got != "bash,str_replace_based_edit_tool,execute_code,recall,finish" {
			t.Errorf("tools offered %s", got)
		}
		r2 := reqs[1].LastUser()
		if len(r2.ToolResults) != 1 || r2.ToolResults[0].Output != "hello world" || r2.ToolResults[0].Name != "bash" {
			t.Errorf("second request's tool results %+v", r2.ToolResults)
		}
		contains(t, "third request's tool result", reqs[2].LastUser().ToolResults[0].Output, "has been edited", "hello drydock")

		// The log: model turn, usage, tool call, observation per step.
		var types []string
		for _, e := range b.rec.Events() {
			types = append(types, string(e.Type))
		}
		step := "model,usage,tool_call,observation"
		if got, want := strings.Join(types, ","), strings.Join([]string{step, step, step}, ","); got != want {
			t.Errorf("events %s; want %s", got, want)
		}
		// Progress after every step, usage summed with a known price.
		p := b.rec.progress
		if len(p) != 3 || p[0].steps != 1 || p[2].steps != 3 {
			t.Fatalf("progress %+v", p)
		}
		var sum int64
		for _, r := range reqs {
			sum += r.Answer.Usage.InputTokens
		}
		if p[2].usage.InputTokens != sum || p[2].usage.OutputTokens <= 0 || p[2].usage.CostUSD <= 0 {
			t.Errorf("usage %+v; want %d input tokens and a cost", p[2].usage, sum)
		}
	})
}

// Every call of a turn runs, in order, and every one is answered.
func TestSeveralCallsInOneTurn(t *testing.T) {
	t.Parallel()
	apis(t, func(t *testing.T, api string) {
		b := setup(t, api, llmtest.Options{Turns: []llmtest.Turn{
			{ToolCalls: []llm.ToolCall{
				call("bash", map[string]string{"command": "echo first > order.txt"}),
				call("bash", map[string]string{"command": "echo second >> order.txt; cat order.txt"}),
				call("str_replace_based_edit_tool", map[string]string{"command": "view", "path": "order.txt"}),
			}},
			finish("done"),
		}}, agent.Config{})
		if _, err := b.run(t.Context(), job("Write two lines."), nil); err != nil {
			t.Fatal(err)
		}
		results := b.srv.Requests()[1].LastUser().ToolResults
		calls := b.srv.Requests()[1].Messages[1].ToolCalls
		if len(results) != 3 || len(calls) != 3 {
			t.Fatalf("%d results for %d calls", len(results), len(calls))
		}
		for i := range results {
			if results[i].CallID != calls[i].ID {
				t.Errorf("result %d answers %s; want %s", i, results[i].CallID, calls[i].ID)
			}
		}
		if results[1].Output != "first\nsecond" {
			t.Errorf("second call saw %q", results[1].Output)
		}
		contains(t, "view", results[2].Output, "     1\tfirst", "     2\tsecond")
	})
}

// A failing tool is an observation the model can correct, not a failed job.
func TestToolErrorIsAnObservation(t *testing.T) {
	t.Parallel()
	apis(t, func(t *testing.T, api string) {
		b := setup(t, api, llmtest.Options{Turns: []llmtest.Turn{
			{ToolCalls: []llm.ToolCall{call("str_replace_based_edit_tool", map[string]string{"command": "str_replace", "path": "missing.py", "old_str": "a", "new_str": "b"})}},
			{ToolCalls: []llm.ToolCall{call("no_such_tool", map[string]string{})}},
			{ToolCalls: []llm.ToolCall{call("str_replace_based_edit_tool", map[string]string{"command": "create", "path": "missing.py", "file_text": "a = 1\n"})}},
			finish("recovered"),
		}}, agent.Config{})
		out, err := b.run(t.Context(), job("Fix missing.py."), nil)
		if err != nil || out.Summary != "recovered" {
			t.Fatalf("outcome %+v, %v", out, err)
		}
		obs := b.rec.observations(t)
		if !obs[0].IsError || !obs[1].IsError || obs[2].IsError {
			t.Errorf("is_error of the observations: %v %v %v", obs[0].IsError, obs[1].IsError, obs[2].IsError)
		}
		r := b.srv.Requests()[1].LastUser().ToolResults[0]
		if !r.IsError || !strings.Contains(r.Output, "does not exist") {
			t.Errorf("the model saw %+v", r)
		}
	})
}

func TestRateLimitIsRetried(t *testing.T) {
	t.Parallel()
	apis(t, func(t *testing.T, api string) {
		b := setup(t, api, llmtest.Options{Turns: []llmtest.Turn{{Fault: llmtest.RateLimit}, {Fault: llmtest.ServerError}, finish("ok")}}, agent.Config{})
		if _, err := b.run(t.Context(), job("Do it."), nil); err != nil {
			t.Fatal(err)
		}
		if n := len(b.srv.Requests()); n != 3 {
			t.Errorf("%d requests; want 3", n)
		}
	})
}

func TestProviderKeepsFailing(t *testing.T) {
	t.Parallel()
	apis(t, func(t *testing.T, api string) {
		b := setup(t, api, llmtest.Options{Turns: llmtest.Repeat(3, llmtest.Turn{Fault: llmtest.Overloaded})}, agent.Config{MaxRetries: 2})
		_, err := b.run(t.Context(), job("Do it."), nil)
		if drydock.ErrorCode(err) != drydock.EUNAVAILABLE {
			t.Fatalf("error %v; want %s", err, drydock.EUNAVAILABLE)
		}
		contains(t, "error", drydock.ErrorMessage(err), "kept failing")
		if len(b.rec.ofType(drydock.EventError)) != 1 {
			t.Errorf("no error event")
		}
	})
}

func TestWrongKeyIsAClearJobError(t *testing.T) {
	t.Parallel()
	apis(t, func(t *testing.T, api string) {
		wrong := "sk-wrongwrongwrongwrong123"
		b := setup(t, api, llmtest.Options{}, agent.Config{APIKey: wrong})
		_, err := b.run(t.Context(), job("Do it."), nil)
		if drydock.ErrorCode(err) != drydock.EUNAUTHORIZED {
			t.Fatalf("error %v; want %s", err, drydock.EUNAUTHORIZED)
		}
		contains(t, "error", drydock.ErrorMessage(err), "rejected the credentials", "_API_KEY")
		for _, e := range b.rec.Events() {
			if strings.Contains(string(e.Data), "wrongwrong") {
				t.Errorf("event %s holds the key: %s", e.Type, e.Data)
			}
		}
		if n := len(b.srv.Requests()); n != 1 {
			t.Errorf("%d requests; a 401 is not retried", n)
		}
	})
}

func TestNoProviderConfigured(t *testing.T) {
	for _, v := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"} {
		t.Setenv(v, "")
	}
	a, err := agent.New(agent.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{a.Check(), func() error { _, err := a.Run(t.Context(), &drydock.AgentRun{Job: job("x")}); return err }()} {
		if drydock.ErrorCode(err) != drydock.EINVALID {
			t.Fatalf("error %v; want %s", err, drydock.EINVALID)
		}
		contains(t, "error", drydock.ErrorMessage(err), "no LLM provider configured", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")
	}
	a, err = agent.New(agent.Config{Provider: "anthropic"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "error", drydock.ErrorMessage(a.Check()), "ANTHROPIC_API_KEY")
	if _, err := agent.New(agent.Config{Provider: "gemini"}, nil); drydock.ErrorCode(err) != drydock.EINVALID {
		t.Errorf("unknown provider: %v", err)
	}
}

// The same action with the same result: warned after 3, stopped after 5.
func TestStuckOnRepeats(t *testing.T) {
	t.Parallel()
	apis(t, func(t *testing.T, api string) {
		same := llmtest.Turn{ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "cat /definitely/missing"})}}
		b := setup(t, api, llmtest.Options{Turns: llmtest.Repeat(5, same)}, agent.Config{})
		_, err := b.run(t.Context(), job("Read the file."), nil)
		contains(t, "error", drydock.ErrorMessage(err), "stuck", "same action with the same result 5 times")
		reqs := b.srv.Requests()
		if len(reqs) != 5 {
			t.Fatalf("%d requests; want 5", len(reqs))
		}
		if strings.Contains(reqs[2].LastUser().Text, "same tool call") {
			t.Errorf("warned too early")
		}
		contains(t, "fourth prompt", reqs[3].LastUser().Text, "same tool call with the same result 3 times")
	})
}

// Turns without tool calls are nudged, then end the run.
func TestStuckOnEmptyTurns(t *testing.T) {
	t.Parallel()
	apis(t, func(t *testing.T, api string) {
		b := setup(t, api, llmtest.Options{Turns: llmtest.Repeat(3, llmtest.Turn{Text: "I think it is done."})}, agent.Config{})
		_, err := b.run(t.Context(), job("Do it."), nil)
		contains(t, "error", drydock.ErrorMessage(err), "stopped using its tools")
		reqs := b.srv.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%d requests", len(reqs))
		}
		contains(t, "second prompt", reqs[1].LastUser().Text, "You replied without calling a tool")
	})
}

func TestMaxSteps(t *testing.T) {
	t.Parallel()
	apis(t, func(t *testing.T, api string) {
		b := setup(t, api, llmtest.Options{Turns: []llmtest.Turn{
			{ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "echo 1"})}},
			{ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "echo 2"})}},
		}}, agent.Config{})
		j := job("Count.")
		j.MaxSteps = 2
		_, err := b.run(t.Context(), j, nil)
		contains(t, "error", drydock.ErrorMessage(err), "used all of its 2 steps")
		if len(b.srv.Requests()) != 2 {
			t.Errorf("%d requests; want 2", len(b.srv.Requests()))
		}
	})
}

func TestTokenBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{Turns: []llmtest.Turn{
		{ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "echo 1"})}, Usage: llm.Usage{InputTokens: 900, OutputTokens: 200}},
	}}, agent.Config{MaxTokens: 1000})
	_, err := b.run(t.Context(), job("Count."), nil)
	contains(t, "error", drydock.ErrorMessage(err), "token budget (1100 of 1000 tokens)")
}

// A run cut short (the orchestrator died) continues from its log: finished
// steps are not run again, and the conversation carries on where it was.
func TestResumeFromHistory(t *testing.T) {
	t.Parallel()
	apis(t, func(t *testing.T, api string) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		appendLine := func(s string) llmtest.Turn {
			return llmtest.Turn{ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "echo " + s + " >> log.txt"})}}
		}
		b := setup(t, api, llmtest.Options{Func: func(r *llmtest.Request) llmtest.Turn {
			switch r.N {
			case 1:
				return appendLine("one")
			case 2:
				return appendLine("two")
			}
			cancel() // the orchestrator goes away while the model thinks
			return llmtest.Turn{Text: "never seen", Delay: time.Minute}
		}}, agent.Config{})
		_, err := b.run(ctx, job("Write the log."), nil)
		if ctx.Err() == nil || err == nil {
			t.Fatalf("first run: %v", err)
		}
		history := b.rec.Events()

		// A new orchestrator, a new model server: the same sandbox.
		srv2 := llmtest.NewServer(t, llmtest.Options{APIKey: llmtest.TestKey, Turns: []llmtest.Turn{appendLine("three"), finish("three lines")}})
		base := srv2.OpenAIBaseURL()
		if api == agent.ProviderAnthropic {
			base = srv2.AnthropicBaseURL()
		}
		a2, err := agent.New(agent.Config{Provider: api, Model: b.model, APIKey: llmtest.TestKey, BaseURL: base}, nil)
		if err != nil {
			t.Fatal(err)
		}
		b.agent, b.srv = a2, srv2
		out, err := b.run(t.Context(), job("Write the log."), history)
		if err != nil || out.Summary != "three lines" {
			t.Fatalf("second run: %+v %v", out, err)
		}
		if got := b.file(t, "log.txt"); got != "one\ntwo\nthree\n" {
			t.Errorf("log.txt = %q; finished steps were redone or lost", got)
		}
		first := srv2.Requests()[0]
		if len(first.Messages) != 5 {
			t.Fatalf("resumed prompt has %d messages; want task + 2 steps", len(first.Messages))
		}
		if c := first.Messages[3].ToolCalls; len(c) != 1 || !strings.Contains(string(c[0].Input), "echo two") {
			t.Errorf("resumed prompt's second step %+v", first.Messages[3])
		}
		p := b.rec.progress
		if last := p[len(p)-1]; last.steps != 4 {
			t.Errorf("steps after resume %d; want 4", last.steps)
		}
	})
}

// A tool call cut short by the restart is answered as interrupted, not run
// again.
func TestResumeAfterInterruptedCall(t *testing.T) {
	t.Parallel()
	apis(t, func(t *testing.T, api string) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		b := setup(t, api, llmtest.Options{Turns: []llmtest.Turn{
			{ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "echo ran >> side-effect.txt; sleep 30"})}},
		}}, agent.Config{})
		go func() {
			// Cancel once the command has had its effect (the shell creates
			// the file before echo writes to it).
			for ctx.Err() == nil {
				if data, _ := os.ReadFile(filepath.Join(b.ws, "side-effect.txt")); string(data) == "ran\n" {
					cancel()
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		if _, err := b.run(ctx, job("Sleep."), nil); err == nil {
			t.Fatal("first run did not stop")
		}
		history := b.rec.Events()
		if n := len(b.rec.ofType(drydock.EventObservation)); n != 0 {
			t.Fatalf("%d observations recorded for a cancelled call", n)
		}
		srv2 := llmtest.NewServer(t, llmtest.Options{APIKey: llmtest.TestKey, Turns: []llmtest.Turn{finish("stopped")}})
		base := srv2.OpenAIBaseURL()
		if api == agent.ProviderAnthropic {
			base = srv2.AnthropicBaseURL()
		}
		a2, _ := agent.New(agent.Config{Provider: api, Model: b.model, APIKey: llmtest.TestKey, BaseURL: base}, nil)
		b.agent = a2
		if _, err := b.run(t.Context(), job("Sleep."), history); err != nil {
			t.Fatal(err)
		}
		r := srv2.Requests()[0].LastUser().ToolResults
		if len(r) != 1 || !r[0].IsError || !strings.Contains(r[0].Output, "interrupted") {
			t.Errorf("the interrupted call was answered with %+v", r)
		}
		if got := b.file(t, "side-effect.txt"); got != "ran\n" {
			t.Errorf("side-effect.txt = %q; the call ran again", got)
		}
	})
}

// A job whose log already holds a successful finish ends at once.
func TestResumeAfterFinish(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderAnthropic, llmtest.Options{Turns: []llmtest.Turn{finish("all good")}}, agent.Config{})
	if _, err := b.run(t.Context(), job("x"), nil); err != nil {
		t.Fatal(err)
	}
	out, err := b.run(t.Context(), job("x"), b.rec.Events())
	if err != nil || out.Summary != "all good" {
		t.Fatalf("%+v %v", out, err)
	}
	if n := len(b.srv.Requests()); n != 1 {
		t.Errorf("%d requests; the finished job asked the model again", n)
	}
}

func TestSecretsAreMaskedInEvents(t *testing.T) {
	t.Parallel()
	// The server passes its environment (cmd/drydock: os.Environ).
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{}, agent.Config{Environ: []string{"DRYDOCK_TEST_DEPLOY_TOKEN=tok-8c1f7e2b9a", "HOME=/home/drydock"}})
	secrets := []string{"tok-8c1f7e2b9a", "sk-proj-abcdefghijklmnopqrstuvwxyz", b.sb.Token, llmtest.TestKey}
	cmd := fmt.Sprintf("echo 'deploy with tok-8c1f7e2b9a'; echo sk-proj-abcdefghijklmnopqrstuvwxyz; echo %s; echo %s", b.sb.Token, llmtest.TestKey)
	b.srv.Add(llmtest.Turn{Text: "Using tok-8c1f7e2b9a.", ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": cmd})}}, finish("done"))
	if _, err := b.run(t.Context(), job("Deploy."), nil); err != nil {
		t.Fatal(err)
	}
	for _, e := range b.rec.Events() {
		for _, s := range secrets {
			if strings.Contains(string(e.Data), s) {
				t.Errorf("%s event holds a secret: %s", e.Type, e.Data)
			}
		}
	}
	obs := b.rec.observations(t)
	contains(t, "observation", obs[0].Output, "deploy with "+agent.Redacted)
	// The model's next prompt is built from the masked log too.
	for _, s := range secrets[:3] {
		if strings.Contains(string(b.srv.Requests()[1].Body), s) {
			t.Errorf("the prompt holds a secret %q", s)
		}
	}
}

func TestLongOutputIsCutAndSaved(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderAnthropic, llmtest.Options{Turns: []llmtest.Turn{
		{ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "seq 1 30000 > big.txt"})}},
		{ToolCalls: []llm.ToolCall{call("str_replace_based_edit_tool", map[string]string{"command": "view", "path": "big.txt"})}},
		finish("viewed"),
	}}, agent.Config{MaxObservationBytes: 20000})
	if _, err := b.run(t.Context(), job("Look."), nil); err != nil {
		t.Fatal(err)
	}
	o := b.rec.observations(t)[1]
	if !o.Truncated || o.OutputPath == "" || len(o.Output) > 20500 {
		t.Fatalf("observation of %d bytes, truncated %v, path %q", len(o.Output), o.Truncated, o.OutputPath)
	}
	contains(t, "observation", o.Output, "     1\t1\n", "30000\t30000", "bytes cut; the whole output is in "+o.OutputPath)
	whole := b.file(t, o.OutputPath)
	contains(t, "saved output", whole, " 15000\t15000\n")
}

func TestRecallFindsOldOutput(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderOpenAI, llmtest.Options{Turns: []llmtest.Turn{
		{ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "echo 'the magic number is 48213'"})}},
		{ToolCalls: []llm.ToolCall{call("bash", map[string]string{"command": "echo unrelated"})}},
		{ToolCalls: []llm.ToolCall{call("recall", map[string]string{"query": "magic number"})}},
		finish("found"),
	}}, agent.Config{})
	if _, err := b.run(t.Context(), job("Remember."), nil); err != nil {
		t.Fatal(err)
	}
	contains(t, "recall", b.rec.observations(t)[2].Output, "48213", "step 1, bash result")
}

// In the desktop profile the computer tool is offered; where the sandbox
// has no display it answers with an error the model can act on.
func TestDesktopProfileOffersComputer(t *testing.T) {
	t.Parallel()
	b := setup(t, agent.ProviderAnthropic, llmtest.Options{Turns: []llmtest.Turn{
		{ToolCalls: []llm.ToolCall{call("computer", map[string]string{"action": "screenshot"}), call("execute_code", map[string]string{"language": "python", "code": "1+1"})}},
		finish("no desktop here"),
	}}, agent.Config{})
	j := job("Look at the screen.")
	j.Profile = drydock.ProfileDesktop
	if _, err := b.run(t.Context(), j, nil); err != nil {
		t.Fatal(err)
	}
	req := b.srv.Requests()[0]
	contains(t, "tools", strings.Join(req.ToolNames(), ","), "computer")
	contains(t, "system prompt", req.System, "graphical desktop")
	obs := b.rec.observations(t)
	if !obs[0].IsError || !obs[1].IsError {
		t.Errorf("observations %+v", obs)
	}
	contains(t, "computer", obs[0].Output, "no desktop")
	contains(t, "execute_code", obs[1].Output, "not available")
}
