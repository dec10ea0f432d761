package openai_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
	"github.com/drydockhq/drydock/llm/openai"
	"github.com/google/go-cmp/cmp"
)

func TestUsesResponses(t *testing.T) {
	t.Parallel()
	const local = "http://127.0.0.1:11434/v1"
	for _, tc := range []struct {
		api, base, model string
		want             bool
	}{
		// On OpenAI's API, auto follows the model.
		{"auto", "", "gpt-5", true},
		{"auto", "", "gpt-5-mini-2025-08-07", true},
		{"auto", "", "gpt-5.1-codex-max", true},
		{"auto", "https://api.openai.com/v1", "o4-mini", true},
		{"auto", "", "o3-pro", true},
		{"auto", "", "o1", true},
		{"auto", "", "codex-mini-latest", true},
		{"auto", "", "computer-use-preview", true},
		{"auto", "", "o4-mini-deep-research", true},
		{"", "", "openai/gpt-5", true},
		{"auto", "", "gpt-4.1", false},
		{"auto", "", "gpt-4o-mini", false},
		{"auto", "", "gpt-3.5-turbo", false},
		{"auto", "", "omni-moderation-latest", false},
		// Anything else speaks chat completions unless told otherwise.
		{"auto", local, "gpt-5", false},
		{"auto", "https://openrouter.ai/api/v1", "openai/gpt-5", false},
		{"auto", "https://api.openai.com.evil.example/v1", "gpt-5", false},
		{"responses", local, "llama3.1:8b", true},
		{"chat", "", "gpt-5", false},
	} {
		if got := openai.UsesResponses(tc.api, tc.base, tc.model); got != tc.want {
			t.Errorf("UsesResponses(%q, %q, %q) = %v; want %v", tc.api, tc.base, tc.model, got, tc.want)
		}
	}
}

func TestConfigIsChecked(t *testing.T) {
	t.Parallel()
	for _, cfg := range []openai.Config{
		{API: "grpc"},
		{ReasoningEffort: "extreme"},
		{ReasoningEffort: "gpt-5=loud"},
		{ReasoningEffort: "high,low"},
		{ReasoningEffort: "=high"},
	} {
		cfg.APIKey = llmtest.TestKey
		_, err := openai.New(cfg)
		if drydock.ErrorCode(err) != drydock.EINVALID {
			t.Errorf("New(%+v) = %v; want %s", cfg, err, drydock.EINVALID)
		}
	}
}

// The effort goes to the models it names, the bare default to reasoning
// models only (others refuse it), on both APIs; a named model has its
// reasoning carried even when its name does not say it reasons.
func TestReasoningEffortPerModel(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.Options{Func: func(*llmtest.Request) llmtest.Turn { return llmtest.Turn{Text: "ok"} }})
	newProvider := func(api string) *openai.Provider {
		p, err := openai.New(openai.Config{APIKey: llmtest.TestKey, BaseURL: srv.OpenAIBaseURL(), API: api,
			ReasoningEffort: "gpt-5=high, gpt-5-nano=minimal, my-deployment=medium, low"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	hi := []llm.Message{{Role: llm.RoleUser, Text: "hi"}}
	resp := newProvider(openai.APIResponses)
	for _, model := range []string{"gpt-5-mini", "gpt-5-nano", "o4-mini", "gpt-4.1", "my-deployment-2", "gpt-5-chat-latest"} {
		if _, err := resp.Complete(t.Context(), &llm.Request{Model: model, Messages: hi}); err != nil {
			t.Fatal(err)
		}
	}
	chat := newProvider(openai.APIChat)
	if _, err := chat.Complete(t.Context(), &llm.Request{Model: "o3", Messages: hi}); err != nil {
		t.Fatal(err)
	}
	type sent struct {
		Effort  string
		Include bool
	}
	var got []sent
	for _, r := range srv.Requests()[:6] {
		got = append(got, sent{r.ReasoningEffort, len(r.Include) > 0})
	}
	want := []sent{{"high", true}, {"minimal", true}, {"low", true}, {"", false}, {"medium", true}, {"", false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("effort and include per model (-want +got):\n%s", diff)
	}
	if body := srv.Requests()[6].Body; !bytes.Contains(body, []byte(`"reasoning_effort":"low"`)) {
		t.Errorf("chat completions request %s; want reasoning_effort low", body)
	}
}

// Under auto, a server that is not OpenAI's gets chat completions even for
// a model OpenAI serves through Responses.
func TestAutoSpeaksChatToCompatibleServers(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.Options{Turns: []llmtest.Turn{{Text: "ok"}}})
	p, err := openai.New(openai.Config{APIKey: llmtest.TestKey, BaseURL: srv.OpenAIBaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(t.Context(), &llm.Request{Model: "gpt-5", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if api := srv.Requests()[0].API; api != "openai" {
		t.Errorf("API %q; want chat completions (openai)", api)
	}
}

// The state lives in the agent's event log, which masks secret-shaped text
// and clips oversized events. A reasoning item altered there is left out
// (with the ids of the items that followed it, which would make the API
// ask for it) instead of failing every later request.
func TestAlteredReasoningIsLeftOut(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.Options{Turns: []llmtest.Turn{
		{Reasoning: "first thought", ToolCalls: []llm.ToolCall{llmtest.Call("echo", `{"text":"a"}`)}},
		{Reasoning: "second thought", ToolCalls: []llm.ToolCall{llmtest.Call("echo", `{"text":"b"}`)}},
		{Text: "done"},
	}})
	p, err := openai.New(openai.Config{APIKey: llmtest.TestKey, BaseURL: srv.OpenAIBaseURL(), API: openai.APIResponses})
	if err != nil {
		t.Fatal(err)
	}
	tools := []llm.Tool{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}}
	req := &llm.Request{Model: "o4-mini", Tools: tools, Messages: []llm.Message{{Role: llm.RoleUser, Text: "echo a then b"}}}
	for range 2 {
		res, err := p.Complete(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleAssistant, ToolCalls: res.ToolCalls, Reasoning: res.Reasoning},
			llm.Message{Role: llm.RoleUser, ToolResults: []llm.ToolResult{{CallID: res.ToolCalls[0].ID, Name: "echo", Output: "ok"}}})
	}
	// What the masker does to a string it takes for a secret.
	st := *req.Messages[1].Reasoning
	var data map[string]any
	if err := json.Unmarshal(st.Data, &data); err != nil {
		t.Fatal(err)
	}
	first := data["items"].([]any)[0].(map[string]any)
	enc := first["encrypted_content"].(string)
	first["encrypted_content"] = enc[:8] + "[REDACTED]" + enc[12:]
	st.Data, _ = json.Marshal(data)
	req.Messages[1].Reasoning = &st

	if _, err := p.Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[2]
	if !cmp.Equal(r.Reasoning, []string{"rs_llmtest_2"}) {
		t.Errorf("reasoning sent back %v; want only the intact rs_llmtest_2", r.Reasoning)
	}
	want := []string{"message user", "function_call call_1_1", "function_call_output call_1_1",
		"reasoning rs_llmtest_2", "function_call fc_llmtest_2_1", "function_call_output call_2_1"}
	if diff := cmp.Diff(want, r.InputItems); diff != "" {
		t.Errorf("input items (-want +got):\n%s", diff)
	}
}

// A response that failed while being generated is an error worth retrying
// later, not an empty turn.
func TestFailedResponseIsUnavailable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"resp_1","object":"response","status":"failed","model":"gpt-5","output":[],
			"error":{"code":"server_error","message":"The model failed to generate a response."}}`))
	}))
	defer srv.Close()
	p, err := openai.New(openai.Config{APIKey: llmtest.TestKey, BaseURL: srv.URL + "/v1", API: openai.APIResponses})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(t.Context(), &llm.Request{Model: "gpt-5", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}})
	if drydock.ErrorCode(err) != drydock.EUNAVAILABLE || !strings.Contains(drydock.ErrorMessage(err), "failed to generate") {
		t.Errorf("error %v; want %s saying the generation failed", err, drydock.EUNAVAILABLE)
	}
}

// A reasoning item goes back only with the item that followed it: after a
// reply cut off while the model was thinking there is none, and sending it
// alone would be refused. An empty message the model produced after its
// reasoning still goes back, so that its reasoning can.
func TestReasoningGoesOnlyWithItsFollowingItem(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.Options{Turns: []llmtest.Turn{
		{Reasoning: "a long thought", StopReason: llm.StopMaxTokens},
		{Reasoning: "then a call", Text: "Calling.", ToolCalls: []llm.ToolCall{llmtest.Call("echo", `{}`)}},
		{Text: "done"},
	}})
	p, err := openai.New(openai.Config{APIKey: llmtest.TestKey, BaseURL: srv.OpenAIBaseURL(), API: openai.APIResponses})
	if err != nil {
		t.Fatal(err)
	}
	tools := []llm.Tool{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	req := &llm.Request{Model: "gpt-5", Tools: tools, Messages: []llm.Message{{Role: llm.RoleUser, Text: "go"}}}
	cut, err := p.Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if cut.StopReason != llm.StopMaxTokens || cut.Reasoning == nil {
		t.Fatalf("first response %+v; want max_tokens with the reasoning as state", cut)
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Reasoning: cut.Reasoning}, llm.Message{Role: llm.RoleUser, Text: "Continue."})
	res, err := p.Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	// The agent lost the text (say, clipped to nothing); the message item
	// still goes, and with it the reasoning.
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: res.ToolCalls, Reasoning: res.Reasoning},
		llm.Message{Role: llm.RoleUser, ToolResults: []llm.ToolResult{{CallID: res.ToolCalls[0].ID, Name: "echo", Output: "ok"}}})
	if _, err := p.Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	want := []string{"message user", "message user",
		"reasoning rs_llmtest_2", "message msg_llmtest_2 commentary", "function_call fc_llmtest_2_1", "function_call_output call_2_1"}
	if diff := cmp.Diff(want, srv.Requests()[2].InputItems); diff != "" {
		t.Errorf("third request's input items (-want +got):\n%s", diff)
	}
}

// Forcing the Responses API on a server that only speaks chat completions
// fails with a message that says how to go back.
func TestResponsesOnAServerWithoutThem(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	p, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", API: openai.APIResponses})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(t.Context(), &llm.Request{Model: "llama3.1:8b", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}})
	if drydock.ErrorCode(err) != drydock.EINVALID || !strings.Contains(drydock.ErrorMessage(err), "--openai-api chat") {
		t.Errorf("error %v; want %s pointing at --openai-api chat", err, drydock.EINVALID)
	}
}

// A model not known to reason, forced onto the Responses API, is not asked
// for encrypted reasoning; if it reasons all the same, the turn goes back
// without the reasoning and without the ids that would make the API ask
// for it.
func TestReasoningWithoutEncryptedContent(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.Options{Turns: []llmtest.Turn{
		{Reasoning: "unasked", Text: "Calling.", ToolCalls: []llm.ToolCall{llmtest.Call("echo", `{}`)}},
		{Text: "done"},
	}})
	p, err := openai.New(openai.Config{APIKey: llmtest.TestKey, BaseURL: srv.OpenAIBaseURL(), API: openai.APIResponses})
	if err != nil {
		t.Fatal(err)
	}
	tools := []llm.Tool{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	req := &llm.Request{Model: "my-deployment", Tools: tools, Messages: []llm.Message{{Role: llm.RoleUser, Text: "go"}}}
	res, err := p.Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reasoning != nil {
		t.Errorf("state %s; want none (nothing can go back)", res.Reasoning.Data)
	}
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Text: res.Text, ToolCalls: res.ToolCalls, Reasoning: res.Reasoning},
		llm.Message{Role: llm.RoleUser, ToolResults: []llm.ToolResult{{CallID: res.ToolCalls[0].ID, Name: "echo", Output: "ok"}}})
	if _, err := p.Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()
	if len(r[0].Include) != 0 {
		t.Errorf("include %v for a model not known to reason", r[0].Include)
	}
	want := []string{"message user", "message assistant", "function_call call_1_1", "function_call_output call_1_1"}
	if diff := cmp.Diff(want, r[1].InputItems); diff != "" {
		t.Errorf("second request's input items (-want +got):\n%s", diff)
	}
}

// Reasoning is read only by the model that thought it: a follow-up job that
// changed models sends the earlier turns without it (and without the ids
// that would ask for it).
func TestReasoningStaysWithItsModel(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.Options{Turns: []llmtest.Turn{
		{Reasoning: "gpt-5 thinking", ToolCalls: []llm.ToolCall{llmtest.Call("echo", `{}`)}},
		{Text: "o3 answering"},
	}})
	p, err := openai.New(openai.Config{APIKey: llmtest.TestKey, BaseURL: srv.OpenAIBaseURL(), API: openai.APIResponses})
	if err != nil {
		t.Fatal(err)
	}
	tools := []llm.Tool{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	req := &llm.Request{Model: "gpt-5", Tools: tools, Messages: []llm.Message{{Role: llm.RoleUser, Text: "go"}}}
	res, err := p.Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: res.ToolCalls, Reasoning: res.Reasoning},
		llm.Message{Role: llm.RoleUser, ToolResults: []llm.ToolResult{{CallID: res.ToolCalls[0].ID, Name: "echo", Output: "ok"}}})
	req.Model = "o3"
	if _, err := p.Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	want := []string{"message user", "function_call call_1_1", "function_call_output call_1_1"}
	if diff := cmp.Diff(want, srv.Requests()[1].InputItems); diff != "" {
		t.Errorf("o3's input items (-want +got):\n%s", diff)
	}
}
