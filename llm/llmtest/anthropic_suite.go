package llmtest

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/google/go-cmp/cmp"
)

// AnthropicFactory builds the Anthropic provider under test, talking to
// srv with TestKey and the given thinking budget (0: the model's default,
// negative: off).
type AnthropicFactory func(t *testing.T, srv *Server, thinkingBudget int) llm.Provider

// The agent's tools as they declare their built-in counterparts.
var (
	nativeBash = llm.Tool{Name: "bash", Description: "Run a command.", Native: &llm.NativeTool{Kind: llm.NativeBash},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"},"restart":{"type":"boolean"}}}`)}
	nativeEditor = llm.Tool{Name: "str_replace_based_edit_tool", Description: "Edit files.", Native: &llm.NativeTool{Kind: llm.NativeTextEditor},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"},"path":{"type":"string"}},"required":["command","path"]}`)}
	nativeComputer = llm.Tool{Name: "computer", Description: "Use the desktop.", Native: &llm.NativeTool{Kind: llm.NativeComputer, DisplayWidth: 1280, DisplayHeight: 800},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"action":{"type":"string"}},"required":["action"]}`)}
	nativeTools = []llm.Tool{nativeBash, nativeEditor, nativeComputer, echoTool}
)

// RunAnthropicNative is the conformance suite of Anthropic's own dialect:
// the built-in tool types by model, and extended thinking kept across a
// tool-use loop.
func RunAnthropicNative(t *testing.T, newProvider AnthropicFactory) {
	s := &nativeSuite{newProvider: newProvider}
	runBehaviours(t, []behaviour{
		{"BuiltInToolsByModel", s.builtInToolsByModel},
		{"ZoomOnlyForAToolThatHasIt", s.zoomOnlyForAToolThatHasIt},
		{"BuiltInCallsRoundTrip", s.builtInCallsRoundTrip},
		{"ThinkingKeptAcrossToolUse", s.thinkingKeptAcrossToolUse},
		{"RedactedThinkingKept", s.redactedThinkingKept},
		{"AlteredThinkingIsRefused", s.alteredThinkingIsRefused},
		{"DroppedThinkingTurnsThinkingOff", s.droppedThinkingTurnsThinkingOff},
		{"ThinkingOff", s.thinkingOff},
	})
}

// nativeSuite holds what RunAnthropicNative's cases share: the provider
// under test.
type nativeSuite struct {
	newProvider AnthropicFactory
}

// setup starts a scripted server playing opts and builds the provider
// against it with the given thinking budget.
func (s *nativeSuite) setup(t *testing.T, opts Options, budget int) (*Server, llm.Provider) {
	t.Helper()
	opts.APIKey = TestKey
	srv := NewServer(t, opts)
	return srv, s.newProvider(t, srv, budget)
}

func (s *nativeSuite) complete(t *testing.T, p llm.Provider, req *llm.Request) (*llm.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	return p.Complete(ctx, req)
}

// toolTypes maps each tool a request offered to its built-in type, or
// "custom".
func toolTypes(r *Request) map[string]string {
	out := map[string]string{}
	for _, t := range r.Tools {
		out[t.Name] = "custom"
		if t.Native != nil {
			out[t.Name] = t.Native.Type
		}
	}
	return out
}

// nativeAsk is a first request offering the native tools to model.
func nativeAsk(model string) *llm.Request {
	return &llm.Request{Model: model, Tools: nativeTools, Messages: []llm.Message{{Role: llm.RoleUser, Text: "Open the app."}}}
}

// viewThought is the thinking of viewTurns' first turn, a tool-use turn.
var (
	viewThought = []llm.Thinking{{Text: "The app is in app.py; view it first."}}
	viewTurns   = []Turn{{Thinking: viewThought, Text: "Viewing.", ToolCalls: []llm.ToolCall{Call("str_replace_based_edit_tool", `{"command":"view","path":"app.py"}`)}}, {Thinking: []llm.Thinking{{Text: "Done."}}, Text: "It prints hi."}}
)

// loop plays a tool-use loop with thinking at budget: the first answer, its
// assistant turn (changed by edit when given) with a result per call, and
// the second request, whose error it returns.
func (s *nativeSuite) loop(t *testing.T, budget int, turns []Turn, edit func(*llm.Message)) (*Server, *llm.Request, error) {
	t.Helper()
	srv, p := s.setup(t, Options{Turns: turns, AllowProblems: true}, budget)
	req := nativeAsk("claude-sonnet-4-5")
	res, err := s.complete(t, p, req)
	if err != nil {
		t.Fatal(err)
	}
	a := llm.Message{Role: llm.RoleAssistant, Reasoning: res.Reasoning, Text: res.Text, ToolCalls: res.ToolCalls}
	if edit != nil {
		edit(&a)
	}
	var results []llm.ToolResult
	for _, c := range res.ToolCalls {
		results = append(results, llm.ToolResult{CallID: c.ID, Name: c.Name, Output: "ok"})
	}
	req.Messages = append(req.Messages, a, llm.Message{Role: llm.RoleUser, ToolResults: results})
	_, err = s.complete(t, p, req)
	return srv, req, err
}

// BuiltInToolsByModel: each model gets the built-in tool types and the beta
// flag it knows, the computer tool the screenshots' display size, and a model
// that knows none gets custom tools.
func (s *nativeSuite) builtInToolsByModel(t *testing.T) {
	cases := []struct {
		model string
		want  map[string]string
		beta  string
	}{
		{"claude-sonnet-4-5-20250929", map[string]string{"bash": "bash_20250124", "str_replace_based_edit_tool": "text_editor_20250728", "computer": "computer_20250124", "echo": "custom"}, "computer-use-2025-01-24"},
		{"claude-opus-4-5", map[string]string{"bash": "bash_20250124", "str_replace_based_edit_tool": "text_editor_20250728", "computer": "computer_20251124", "echo": "custom"}, "computer-use-2025-11-24"},
		{"claude-sonnet-4-20250514", map[string]string{"bash": "bash_20250124", "str_replace_based_edit_tool": "text_editor_20250429", "computer": "computer_20250124", "echo": "custom"}, "computer-use-2025-01-24"},
		// Claude 3.7's editor is named str_replace_editor: the agent's
		// keeps its own name as a custom tool.
		{"claude-3-7-sonnet-latest", map[string]string{"bash": "bash_20250124", "str_replace_based_edit_tool": "custom", "computer": "computer_20250124", "echo": "custom"}, "computer-use-2025-01-24"},
		{"claude-3-5-haiku-latest", map[string]string{"bash": "custom", "str_replace_based_edit_tool": "custom", "computer": "custom", "echo": "custom"}, ""},
		{Model, map[string]string{"bash": "custom", "str_replace_based_edit_tool": "custom", "computer": "custom", "echo": "custom"}, ""},
	}
	srv, p := s.setup(t, Options{Turns: Repeat(len(cases), Turn{Text: "ok"})}, -1)
	for _, c := range cases {
		if _, err := s.complete(t, p, nativeAsk(c.model)); err != nil {
			t.Fatalf("%s: %v", c.model, err)
		}
	}
	for i, r := range srv.Requests() {
		c := cases[i]
		if diff := cmp.Diff(c.want, toolTypes(r)); diff != "" {
			t.Errorf("%s: tool types (-want +got):\n%s", c.model, diff)
		}
		if got := slices.Contains(r.Betas, c.beta); c.beta != "" && !got || c.beta == "" && len(r.Betas) > 0 {
			t.Errorf("%s: betas %v; want %q", c.model, r.Betas, c.beta)
		}
		for _, tool := range r.Tools {
			if tool.Native != nil && tool.Native.Kind == llm.NativeComputer && (tool.Native.DisplayWidth != 1280 || tool.Native.DisplayHeight != 800) {
				t.Errorf("%s: computer display %dx%d; want the screenshots' 1280x800", c.model, tool.Native.DisplayWidth, tool.Native.DisplayHeight)
			}
		}
	}
}

// ZoomOnlyForAToolThatHasIt: zoom is offered only with a computer tool type
// that has it.
func (s *nativeSuite) zoomOnlyForAToolThatHasIt(t *testing.T) {
	zooming := nativeComputer
	zooming.Native = &llm.NativeTool{Kind: llm.NativeComputer, DisplayWidth: 1280, DisplayHeight: 800, Zoom: true}
	srv, p := s.setup(t, Options{Turns: Repeat(3, Turn{Text: "ok"})}, -1)
	for _, c := range []struct {
		model string
		tool  llm.Tool
	}{{"claude-opus-4-5", zooming}, {"claude-opus-4-5", nativeComputer}, {"claude-sonnet-4-5", zooming}} {
		if _, err := s.complete(t, p, &llm.Request{Model: c.model, Tools: []llm.Tool{c.tool}, Messages: []llm.Message{{Role: llm.RoleUser, Text: "Look."}}}); err != nil {
			t.Fatalf("%s: %v", c.model, err)
		}
	}
	var zoom []bool
	for _, r := range srv.Requests() {
		zoom = append(zoom, r.Tools[0].Native.Zoom)
	}
	// computer_20250124 has no zoom: it is not offered there.
	if want := []bool{true, false, false}; !slices.Equal(zoom, want) {
		t.Errorf("zoom enabled %v; want %v", zoom, want)
	}
}

// BuiltInCallsRoundTrip: calls of the built-in tools come back with their
// inputs, and their results, a screenshot included, go back.
func (s *nativeSuite) builtInCallsRoundTrip(t *testing.T) {
	// Inputs as the built-in tools produce them.
	calls := []llm.ToolCall{
		Call("computer", `{"action":"left_click","coordinate":[640,400],"text":"shift"}`),
		Call("str_replace_based_edit_tool", `{"command":"view","path":"/workspace/app.py","view_range":[1,20]}`),
		Call("bash", `{"restart":true}`),
	}
	srv, p := s.setup(t, Options{Turns: []Turn{{ToolCalls: calls}, {Text: "Done."}}}, -1)
	req := nativeAsk("claude-sonnet-4-5")
	res, err := s.complete(t, p, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToolCalls) != 3 {
		t.Fatalf("calls %+v; want 3", res.ToolCalls)
	}
	for i, c := range res.ToolCalls {
		if c.Name != calls[i].Name || !jsonEqual(c.Input, calls[i].Input) {
			t.Errorf("call %d = %s %s; want %s %s", i, c.Name, c.Input, calls[i].Name, calls[i].Input)
		}
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, ToolCalls: res.ToolCalls},
		llm.Message{Role: llm.RoleUser, ToolResults: []llm.ToolResult{
			{CallID: res.ToolCalls[0].ID, Name: "computer", Output: "Performed left_click.", Images: []llm.Image{{MediaType: "image/png", Data: PNG}}},
			{CallID: res.ToolCalls[1].ID, Name: "str_replace_based_edit_tool", Output: "     1\tprint('hi')"},
			{CallID: res.ToolCalls[2].ID, Name: "bash", Output: "The shell was restarted."},
		}})
	if _, err := s.complete(t, p, req); err != nil {
		t.Fatal(err)
	}
	if r := srv.Requests()[1]; len(r.LastUser().ToolResults) != 3 || len(r.LastUser().ToolResults[0].Images) != 1 {
		t.Errorf("results %+v; want three, the first with its screenshot", r.LastUser().ToolResults)
	}
}

// ThinkingKeptAcrossToolUse: the model's default budget is asked with
// interleaved thinking, and the signed thinking goes back unchanged in a
// tool-use loop.
func (s *nativeSuite) thinkingKeptAcrossToolUse(t *testing.T) {
	srv, _, err := s.loop(t, 0, viewTurns, nil)
	if err != nil {
		t.Fatalf("second request: %v (%v)", err, srv.Problems())
	}
	reqs := srv.Requests()
	if reqs[0].Thinking != 4096 || reqs[0].MaxTokens <= 4096 {
		t.Errorf("thinking budget %d, max_tokens %d; want the model's default 4096 below max_tokens", reqs[0].Thinking, reqs[0].MaxTokens)
	}
	if !slices.Contains(reqs[0].Betas, Interleaved) {
		t.Errorf("betas %v; want %s with tools offered", reqs[0].Betas, Interleaved)
	}
	got := reqs[1].Messages[1].Reasoning.Thinking()
	if len(got) != 1 || got[0] != SignThinking(viewThought[0]) {
		t.Errorf("thinking sent back %+v; want the signed block unchanged", got)
	}
	if len(srv.Problems()) > 0 {
		t.Errorf("problems %v", srv.Problems())
	}
}

// RedactedThinkingKept: a redacted thinking block goes back sealed, before
// the visible one, under the configured budget.
func (s *nativeSuite) redactedThinkingKept(t *testing.T) {
	turns := slices.Clone(viewTurns)
	turns[0].Thinking = []llm.Thinking{{Redacted: "flagged reasoning"}, {Text: "and a visible part"}}
	srv, _, err := s.loop(t, 2048, turns, nil)
	if err != nil {
		t.Fatalf("second request: %v (%v)", err, srv.Problems())
	}
	got := srv.Requests()[1].Messages[1].Reasoning.Thinking()
	if len(got) != 2 || got[0].Redacted == "" || got[0].Redacted == "flagged reasoning" || got[1].Text != "and a visible part" {
		t.Errorf("thinking sent back %+v; want the sealed redacted block, then the visible one", got)
	}
	if srv.Requests()[0].Thinking != 2048 {
		t.Errorf("budget %d; want the configured 2048", srv.Requests()[0].Thinking)
	}
}

// AlteredThinkingIsRefused: thinking altered before it is sent back gets the
// API's 400 naming the signature, not retried.
func (s *nativeSuite) alteredThinkingIsRefused(t *testing.T) {
	srv, _, err := s.loop(t, 0, viewTurns, func(a *llm.Message) {
		th := a.Reasoning.Thinking()
		th[0].Text += " (edited)"
		a.Reasoning = llm.ThinkingReasoning(th)
	})
	if drydock.ErrorCode(err) != drydock.EINVALID || !strings.Contains(drydock.ErrorMessage(err), "signature") {
		t.Fatalf("error %v; want %s naming the signature", err, drydock.EINVALID)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests; a 400 is not retried", n)
	}
}

// DroppedThinkingTurnsThinkingOff: a loop whose last turn lost its thinking
// is asked without thinking, which the API accepts.
func (s *nativeSuite) droppedThinkingTurnsThinkingOff(t *testing.T) {
	// The API refuses to think on in a tool-use loop whose last turn
	// lost its thinking; the provider asks without thinking instead.
	srv, _, err := s.loop(t, 0, viewTurns, func(a *llm.Message) { a.Reasoning = nil })
	if err != nil {
		t.Fatalf("second request: %v (%v)", err, srv.Problems())
	}
	if r := srv.Requests()[1]; r.Thinking != 0 {
		t.Errorf("thinking budget %d; want off for a loop whose last turn has no thinking", r.Thinking)
	}
}

// ThinkingOff: with thinking off, nothing is asked, played or sent back.
func (s *nativeSuite) thinkingOff(t *testing.T) {
	srv, _, err := s.loop(t, -1, viewTurns, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range srv.Requests() {
		if len(r.Answer.Thinking) > 0 {
			t.Errorf("request %d: the answer thought %+v; want no thinking played when off", r.N, r.Answer.Thinking)
		}
		if r.Thinking != 0 || slices.Contains(r.Betas, Interleaved) || len(r.Messages) > 1 && r.Messages[1].Reasoning != nil {
			t.Errorf("request %d: thinking %d, betas %v, messages %+v; want no thinking", r.N, r.Thinking, r.Betas, r.Messages)
		}
	}
}
