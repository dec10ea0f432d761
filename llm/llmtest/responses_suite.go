package llmtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/google/go-cmp/cmp"
)

// ReasoningModel is the model the Responses cases ask for: a name every
// provider knows as a reasoning model, so that its reasoning is carried.
const ReasoningModel = "gpt-5-mini"

// RunResponses is the conformance suite of a provider speaking OpenAI's
// Responses API, run besides Run: reasoning items carried across turns
// (store=false, encrypted), parallel tool calls, images inside tool
// results, reasoning tokens.
func RunResponses(t *testing.T, newProvider Factory) {
	s := &responsesSuite{newProvider: newProvider}
	runBehaviours(t, []behaviour{
		{"ReasoningCarriedAcrossTurns", s.reasoningCarriedAcrossTurns},
		{"PreviousReasoningIsRequired", s.previousReasoningIsRequired},
		{"ParallelToolCalls", s.parallelToolCalls},
		{"ImagesInsideToolResults", s.imagesInsideToolResults},
		{"ReasoningTokens", s.reasoningTokens},
		{"RefusalStopsWithOther", s.refusalStopsWithOther},
	})
}

// responsesSuite holds what RunResponses' cases share: the provider under
// test.
type responsesSuite struct {
	newProvider Factory
}

// setup starts a scripted server playing opts and builds the provider
// against it.
func (s *responsesSuite) setup(t *testing.T, opts Options) (*Server, llm.Provider) {
	t.Helper()
	opts.APIKey = TestKey
	srv := NewServer(t, opts)
	return srv, s.newProvider(t, srv, Config{APIKey: TestKey, MaxRetries: 2, RequestTimeout: 10 * time.Second})
}

// complete sends a copy of req (with ReasoningModel unless it names
// another).
func (s *responsesSuite) complete(t *testing.T, p llm.Provider, req *llm.Request) (*llm.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	r := *req
	if r.Model == "" {
		r.Model = ReasoningModel
	}
	return p.Complete(ctx, &r)
}

// step sends req, checks that it got an answer, and appends the answer and
// one result per call to req, as the agent does.
func (s *responsesSuite) step(t *testing.T, p llm.Provider, req *llm.Request) *llm.Response {
	t.Helper()
	res, err := s.complete(t, p, req)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Text: res.Text, ToolCalls: res.ToolCalls, Reasoning: res.Reasoning})
	if len(res.ToolCalls) > 0 {
		u := llm.Message{Role: llm.RoleUser}
		for _, c := range res.ToolCalls {
			u.ToolResults = append(u.ToolResults, llm.ToolResult{CallID: c.ID, Name: c.Name, Output: "echoed " + string(c.Input)})
		}
		req.Messages = append(req.Messages, u)
	}
	return res
}

// ReasoningCarriedAcrossTurns: with store=false and the encrypted reasoning
// included, each turn's reasoning goes back with its output items, in order.
func (s *responsesSuite) reasoningCarriedAcrossTurns(t *testing.T) {
	srv, p := s.setup(t, Options{Turns: []Turn{
		{Reasoning: "The user wants an echo; call the tool.", Text: "Echoing.", ToolCalls: []llm.ToolCall{Call("echo", `{"text":"one"}`)}},
		{Reasoning: "It worked; echo once more.", ToolCalls: []llm.ToolCall{Call("echo", `{"text":"two"}`)}},
		{Text: "Done."},
	}})
	req := &llm.Request{System: "Use tools.", Tools: []llm.Tool{echoTool}, Messages: []llm.Message{{Role: llm.RoleUser, Text: "Echo one, then two."}}}
	first := s.step(t, p, req)
	if first.Reasoning == nil || first.Text != "Echoing." || len(first.ToolCalls) != 1 {
		t.Fatalf("first response %+v; want text, one call and the reasoning as state", first)
	}
	s.step(t, p, req)
	if last := s.step(t, p, req); last.Text != "Done." || last.Reasoning != nil {
		t.Errorf("last response %+v; want Done. without state (it did not reason)", last)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests; want 3", len(reqs))
	}
	for _, r := range reqs {
		if r.Store == nil || *r.Store || !cmp.Equal(r.Include, []string{"reasoning.encrypted_content"}) {
			t.Errorf("request %d: store %v include %v; want store false with the encrypted reasoning included", r.N, r.Store, r.Include)
		}
	}
	want := []string{
		"message user",
		"reasoning rs_llmtest_1", "message msg_llmtest_1 commentary", "function_call fc_llmtest_1_1", "function_call_output call_1_1",
		"reasoning rs_llmtest_2", "function_call fc_llmtest_2_1", "function_call_output call_2_1",
	}
	if diff := cmp.Diff(want, reqs[2].InputItems); diff != "" {
		t.Errorf("third request's input items (-want +got):\n%s", diff)
	}
}

// PreviousReasoningIsRequired: the scripted server holds the provider to what
// the API needs under store=false: a request that dropped the reasoning of
// the previous output gets the API's 400, said clearly and not retried.
func (s *responsesSuite) previousReasoningIsRequired(t *testing.T) {
	// The scripted server holds the provider to what the API needs
	// under store=false; a provider that dropped the reasoning of the
	// previous output gets the API's 400, said clearly.
	srv, p := s.setup(t, Options{AllowProblems: true, Turns: []Turn{
		{Reasoning: "call echo", ToolCalls: []llm.ToolCall{Call("echo", `{"text":"x"}`)}},
		{Text: "never"},
	}})
	req := &llm.Request{Tools: []llm.Tool{echoTool}, Messages: []llm.Message{{Role: llm.RoleUser, Text: "Echo x."}}}
	s.step(t, p, req)
	req.Messages[1].Reasoning = nil // as a provider that forgot it would send
	_, err := s.complete(t, p, req)
	if drydock.ErrorCode(err) != drydock.EINVALID || !strings.Contains(drydock.ErrorMessage(err), "reasoning") {
		t.Fatalf("error %v; want %s about the missing reasoning", err, drydock.EINVALID)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests; a 400 must not be retried", n)
	}
}

// ParallelToolCalls: several calls in one answer come back in order, and
// their outputs go back after them.
func (s *responsesSuite) parallelToolCalls(t *testing.T) {
	calls := []llm.ToolCall{Call("echo", `{"text":"a"}`), Call("shot", `{}`), Call("echo", `{"text":"c"}`)}
	srv, p := s.setup(t, Options{Turns: []Turn{{Reasoning: "three at once", ToolCalls: calls}, {Text: "ok"}}})
	req := &llm.Request{Tools: []llm.Tool{echoTool, shotTool}, Messages: []llm.Message{{Role: llm.RoleUser, Text: "Do three things."}}}
	res := s.step(t, p, req)
	if len(res.ToolCalls) != 3 || res.StopReason != llm.StopToolUse {
		t.Fatalf("response %+v; want three calls", res)
	}
	for i, c := range res.ToolCalls {
		if c.Name != calls[i].Name || !jsonEqual(c.Input, calls[i].Input) {
			t.Errorf("call %d = %s %s; want %s %s", i, c.Name, c.Input, calls[i].Name, calls[i].Input)
		}
	}
	s.step(t, p, req)
	want := []string{
		"message user", "reasoning rs_llmtest_1",
		"function_call fc_llmtest_1_1", "function_call fc_llmtest_1_2", "function_call fc_llmtest_1_3",
		"function_call_output call_1_1", "function_call_output call_1_2", "function_call_output call_1_3",
	}
	if diff := cmp.Diff(want, srv.Requests()[1].InputItems); diff != "" {
		t.Errorf("second request's input items (-want +got):\n%s", diff)
	}
}

// ImagesInsideToolResults: a tool result's image goes inside its
// function_call_output, not as a user message.
func (s *responsesSuite) imagesInsideToolResults(t *testing.T) {
	srv, p := s.setup(t, Options{Turns: []Turn{{Text: "I see it."}}})
	req := &llm.Request{Tools: []llm.Tool{shotTool}, Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "Take a picture."},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_shot_1", Name: "shot", Input: []byte(`{}`)}}},
		{Role: llm.RoleUser, ToolResults: []llm.ToolResult{{CallID: "call_shot_1", Name: "shot", Output: "a screenshot", Images: []llm.Image{{MediaType: "image/png", Data: PNG}}}}},
	}}
	if _, err := s.complete(t, p, req); err != nil {
		t.Fatal(err)
	}
	last := srv.Requests()[0].LastUser()
	if len(last.ToolResults) != 1 || len(last.ToolResults[0].Images) != 1 || last.ToolResults[0].Output != "a screenshot" {
		t.Fatalf("last user turn %+v; want the image inside the function_call_output", last)
	}
	checkImage(t, last.ToolResults[0].Images[0])
	if last.Text != "" || len(last.Images) != 0 {
		t.Errorf("the image also went as a user message: %+v", last)
	}
}

// ReasoningTokens: reasoning tokens are reported with the rest of the usage.
func (s *responsesSuite) reasoningTokens(t *testing.T) {
	u := llm.Usage{InputTokens: 100, OutputTokens: 60, CacheReadTokens: 40, CacheWriteTokens: 10, ReasoningTokens: 45}
	_, p := s.setup(t, Options{Turns: []Turn{{Reasoning: "hmm", Text: "ok", Usage: u}}})
	res, err := s.complete(t, p, &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage != u {
		t.Errorf("usage %+v; want %+v", res.Usage, u)
	}
}

// RefusalStopsWithOther: a refused or filtered answer stops with other.
func (s *responsesSuite) refusalStopsWithOther(t *testing.T) {
	_, p := s.setup(t, Options{Turns: []Turn{{Text: "filtered", StopReason: llm.StopOther}}})
	res, err := s.complete(t, p, &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != llm.StopOther {
		t.Errorf("stop reason %q; want other", res.StopReason)
	}
}
