package llmtest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/drydockhq/drydock/llm"
	"github.com/google/go-cmp/cmp"
)

// The replies a provider reads and the requests it sends.

// TextReply: a plain answer comes back with its text, end_turn and usage, and
// the request carries the model, system prompt, key and messages.
func (s *suite) textReply(t *testing.T) {
	srv, p := s.setup(t, Options{Turns: []Turn{{Text: "Hello!"}}}, Config{})
	res, err := s.complete(t, p, hello)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Hello!" || len(res.ToolCalls) != 0 || res.StopReason != llm.StopEndTurn {
		t.Errorf("response %+v; want text Hello!, no calls, end_turn", res)
	}
	if res.Usage.InputTokens <= 0 || res.Usage.OutputTokens <= 0 {
		t.Errorf("usage %+v; want tokens counted", res.Usage)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests; want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != Model || r.System != "You are a test." || r.Credential != TestKey {
		t.Errorf("request model %q system %q credential ok=%v", r.Model, r.System, r.Credential == TestKey)
	}
	want := []llm.Message{{Role: llm.RoleUser, Text: "Say hello."}}
	if diff := cmp.Diff(want, r.Messages); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

// ToolCallRoundTrip: tool calls come back with ids and their inputs, and
// their results (one an error) go back in call order with the tool offered as
// declared.
func (s *suite) toolCallRoundTrip(t *testing.T) {
	calls := []llm.ToolCall{Call("echo", `{"text":"one"}`), Call("echo", `{"text":"two","times":2}`)}
	srv, p := s.setup(t, Options{Turns: []Turn{{Text: "Echoing twice.", ToolCalls: calls}, {Text: "Done."}}}, Config{})
	req := &llm.Request{System: "Use tools.", Tools: []llm.Tool{echoTool}, MaxTokens: 1000,
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "Echo one and two."}}}
	res, err := s.complete(t, p, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != llm.StopToolUse || len(res.ToolCalls) != 2 || res.Text != "Echoing twice." {
		t.Fatalf("response %+v; want two calls with text and stop tool_use", res)
	}
	for i, c := range res.ToolCalls {
		if c.ID == "" || c.Name != "echo" || !jsonEqual(c.Input, calls[i].Input) {
			t.Errorf("call %d = %s %s %s; want echo %s with an id", i, c.ID, c.Name, c.Input, calls[i].Input)
		}
	}
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Text: res.Text, ToolCalls: res.ToolCalls},
		llm.Message{Role: llm.RoleUser, ToolResults: []llm.ToolResult{
			{CallID: res.ToolCalls[0].ID, Name: "echo", Output: "one"},
			{CallID: res.ToolCalls[1].ID, Name: "echo", Output: "no such thing", IsError: true},
		}})
	res2, err := s.complete(t, p, req)
	if err != nil {
		t.Fatal(err)
	}
	if res2.Text != "Done." {
		t.Errorf("second response %+v", res2)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests; want 2", len(reqs))
	}
	if got := reqs[0].ToolNames(); !cmp.Equal(got, []string{"echo"}) {
		t.Errorf("tools offered %v", got)
	}
	if !jsonEqual(reqs[0].Tools[0].InputSchema, echoTool.InputSchema) || reqs[0].Tools[0].Description != echoTool.Description {
		t.Errorf("tool sent as %s %q; want %s", reqs[0].Tools[0].InputSchema, reqs[0].Tools[0].Description, echoTool.InputSchema)
	}
	msgs := reqs[1].Messages
	if len(msgs) != 3 || msgs[1].Role != llm.RoleAssistant || len(msgs[1].ToolCalls) != 2 {
		t.Fatalf("second request messages %+v", msgs)
	}
	results := msgs[2].ToolResults
	if len(results) != 2 || results[0].CallID != res.ToolCalls[0].ID || results[1].CallID != res.ToolCalls[1].ID {
		t.Fatalf("tool results %+v; want both, in call order", results)
	}
	if results[0].Output != "one" || results[0].IsError || !results[1].IsError || !strings.Contains(results[1].Output, "no such thing") {
		t.Errorf("tool results %+v", results)
	}
}

// Images: images reach the model both inside a tool result and in a user
// message beside it.
func (s *suite) images(t *testing.T) {
	srv, p := s.setup(t, Options{Turns: []Turn{{Text: "I see a pixel."}}}, Config{})
	req := &llm.Request{Tools: []llm.Tool{shotTool}, Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "Take a picture."},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_shot_1", Name: "shot", Input: json.RawMessage(`{}`)}}},
		{Role: llm.RoleUser, ToolResults: []llm.ToolResult{{CallID: "call_shot_1", Name: "shot", Output: "a screenshot", Images: []llm.Image{{MediaType: "image/png", Data: PNG}}}},
			Text: "And this one too:", Images: []llm.Image{{MediaType: "image/png", Data: PNG}}},
	}}
	if _, err := s.complete(t, p, req); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	images := 0
	for _, m := range r.Messages {
		for _, img := range m.Images {
			images += checkImage(t, img)
		}
		for _, tr := range m.ToolResults {
			for _, img := range tr.Images {
				images += checkImage(t, img)
			}
		}
	}
	if images != 2 {
		t.Errorf("%d images reached the model; want 2", images)
	}
	last := r.LastUser()
	if len(last.ToolResults) != 1 || last.ToolResults[0].CallID != "call_shot_1" || !strings.Contains(last.Text, "And this one too:") {
		t.Errorf("last user message %+v", last)
	}
}

// Usage: the usage the API reports, cache reads and writes included, is
// returned unchanged.
func (s *suite) usage(t *testing.T) {
	u := llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 50, CacheWriteTokens: 10}
	_, p := s.setup(t, Options{Turns: []Turn{{Text: "ok", Usage: u}}}, Config{})
	res, err := s.complete(t, p, hello)
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage != u {
		t.Errorf("usage %+v; want %+v", res.Usage, u)
	}
}

// StopMaxTokens: an answer cut at max_tokens says so.
func (s *suite) stopMaxTokens(t *testing.T) {
	_, p := s.setup(t, Options{Turns: []Turn{{Text: "cut sho", StopReason: llm.StopMaxTokens}}}, Config{})
	res, err := s.complete(t, p, hello)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != llm.StopMaxTokens {
		t.Errorf("stop reason %q; want max_tokens", res.StopReason)
	}
}

// MalformedArgumentsSurvive: arguments that are not a JSON object are handed
// on, and the next request is still valid.
func (s *suite) malformedArgumentsSurvive(t *testing.T) {
	// A model may produce arguments that are not a JSON object; the
	// provider must hand them on and still send a valid next request.
	srv, p := s.setup(t, Options{Turns: []Turn{
		{ToolCalls: []llm.ToolCall{{Name: "echo", Input: json.RawMessage(`["not","an","object"]`)}}},
		{Text: "sorry"},
	}}, Config{})
	req := &llm.Request{Tools: []llm.Tool{echoTool}, Messages: []llm.Message{{Role: llm.RoleUser, Text: "Echo."}}}
	res, err := s.complete(t, p, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToolCalls) != 1 {
		t.Fatalf("calls %+v", res.ToolCalls)
	}
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: res.ToolCalls},
		llm.Message{Role: llm.RoleUser, ToolResults: []llm.ToolResult{{CallID: res.ToolCalls[0].ID, Name: "echo", Output: "input must be an object", IsError: true}}})
	if _, err := s.complete(t, p, req); err != nil {
		t.Fatalf("request after malformed arguments: %v (%v)", err, srv.Problems())
	}
}
