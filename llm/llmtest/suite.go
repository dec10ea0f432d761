package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/google/go-cmp/cmp"
)

// Config is what the suite asks a factory to configure.
type Config struct {
	APIKey         string        // the credential to send
	MaxRetries     int           // retries on 429, 5xx, timeouts and dropped connections
	RequestTimeout time.Duration // per attempt
}

// Factory builds the provider under test, talking to srv with cfg.
type Factory func(t *testing.T, srv *Server, cfg Config) llm.Provider

// TestKey is the credential the suite's servers accept.
const TestKey = "sk-llmtest-0123456789abcdefghij"

// Model is the model name the suite asks for.
const Model = "llmtest-model"

// PNG is a valid 1x1 PNG, for image round trips.
var PNG = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
	0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
	0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
	0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
}

var echoTool = llm.Tool{
	Name:        "echo",
	Description: "Echo the text back.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"what to echo"},"times":{"type":"integer"}},"required":["text"],"additionalProperties":false}`),
}

var shotTool = llm.Tool{
	Name:        "shot",
	Description: "Take a picture.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{}}`),
}

// Run is the conformance suite every llm.Provider passes.
func Run(t *testing.T, newProvider Factory) {
	setup := func(t *testing.T, opts Options, cfg Config) (*Server, llm.Provider) {
		t.Helper()
		if opts.APIKey == "" {
			opts.APIKey = TestKey
		}
		if cfg.APIKey == "" {
			cfg.APIKey = TestKey
		}
		if cfg.MaxRetries == 0 {
			cfg.MaxRetries = 3
		}
		if cfg.RequestTimeout == 0 {
			cfg.RequestTimeout = 10 * time.Second
		}
		srv := NewServer(t, opts)
		return srv, newProvider(t, srv, cfg)
	}
	complete := func(t *testing.T, p llm.Provider, req *llm.Request) (*llm.Response, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		r := *req // the suite's requests are shared by parallel tests
		if r.Model == "" {
			r.Model = Model
		}
		return p.Complete(ctx, &r)
	}
	hello := &llm.Request{System: "You are a test.", Messages: []llm.Message{{Role: llm.RoleUser, Text: "Say hello."}}}

	t.Run("TextReply", func(t *testing.T) {
		t.Parallel()
		srv, p := setup(t, Options{Turns: []Turn{{Text: "Hello!"}}}, Config{})
		res, err := complete(t, p, hello)
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
	})

	t.Run("ToolCallRoundTrip", func(t *testing.T) {
		t.Parallel()
		calls := []llm.ToolCall{Call("echo", `{"text":"one"}`), Call("echo", `{"text":"two","times":2}`)}
		srv, p := setup(t, Options{Turns: []Turn{{Text: "Echoing twice.", ToolCalls: calls}, {Text: "Done."}}}, Config{})
		req := &llm.Request{System: "Use tools.", Tools: []llm.Tool{echoTool}, MaxTokens: 1000,
			Messages: []llm.Message{{Role: llm.RoleUser, Text: "Echo one and two."}}}
		res, err := complete(t, p, req)
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
		res2, err := complete(t, p, req)
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
	})

	t.Run("Images", func(t *testing.T) {
		t.Parallel()
		srv, p := setup(t, Options{Turns: []Turn{{Text: "I see a pixel."}}}, Config{})
		req := &llm.Request{Tools: []llm.Tool{shotTool}, Messages: []llm.Message{
			{Role: llm.RoleUser, Text: "Take a picture."},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_shot_1", Name: "shot", Input: json.RawMessage(`{}`)}}},
			{Role: llm.RoleUser, ToolResults: []llm.ToolResult{{CallID: "call_shot_1", Name: "shot", Output: "a screenshot", Images: []llm.Image{{MediaType: "image/png", Data: PNG}}}},
				Text: "And this one too:", Images: []llm.Image{{MediaType: "image/png", Data: PNG}}},
		}}
		if _, err := complete(t, p, req); err != nil {
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
	})

	t.Run("Usage", func(t *testing.T) {
		t.Parallel()
		u := llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 50, CacheWriteTokens: 10}
		_, p := setup(t, Options{Turns: []Turn{{Text: "ok", Usage: u}}}, Config{})
		res, err := complete(t, p, hello)
		if err != nil {
			t.Fatal(err)
		}
		if res.Usage != u {
			t.Errorf("usage %+v; want %+v", res.Usage, u)
		}
	})

	t.Run("StopMaxTokens", func(t *testing.T) {
		t.Parallel()
		_, p := setup(t, Options{Turns: []Turn{{Text: "cut sho", StopReason: llm.StopMaxTokens}}}, Config{})
		res, err := complete(t, p, hello)
		if err != nil {
			t.Fatal(err)
		}
		if res.StopReason != llm.StopMaxTokens {
			t.Errorf("stop reason %q; want max_tokens", res.StopReason)
		}
	})

	t.Run("RetriesRateLimit", func(t *testing.T) {
		t.Parallel()
		srv, p := setup(t, Options{Turns: []Turn{{Fault: RateLimit}, {Fault: RateLimit}, {Text: "finally"}}}, Config{})
		res, err := complete(t, p, hello)
		if err != nil {
			t.Fatal(err)
		}
		if res.Text != "finally" || len(srv.Requests()) != 3 {
			t.Errorf("text %q after %d requests; want finally after 3", res.Text, len(srv.Requests()))
		}
	})

	t.Run("RetriesServerErrorsAndDrops", func(t *testing.T) {
		t.Parallel()
		srv, p := setup(t, Options{Turns: []Turn{{Fault: ServerError}, {Fault: Drop}, {Fault: Overloaded}, {Text: "back"}}}, Config{MaxRetries: 3})
		res, err := complete(t, p, hello)
		if err != nil {
			t.Fatal(err)
		}
		if res.Text != "back" || len(srv.Requests()) != 4 {
			t.Errorf("text %q after %d requests; want back after 4", res.Text, len(srv.Requests()))
		}
	})

	t.Run("RetriesAnswersCutOff", func(t *testing.T) {
		t.Parallel()
		srv, p := setup(t, Options{Turns: []Turn{{Text: "lost", Fault: Cut}, {Text: "lost again", Fault: Cut}, {Text: "whole"}}}, Config{MaxRetries: 3})
		res, err := complete(t, p, hello)
		if err != nil {
			t.Fatal(err)
		}
		if res.Text != "whole" || len(srv.Requests()) != 3 {
			t.Errorf("text %q after %d requests; want whole after 3", res.Text, len(srv.Requests()))
		}
	})

	t.Run("AnswersCutOffUntilRetriesRunOut", func(t *testing.T) {
		t.Parallel()
		srv, p := setup(t, Options{Turns: Repeat(3, Turn{Text: "never whole", Fault: Cut})}, Config{MaxRetries: 2})
		_, err := complete(t, p, hello)
		if drydock.ErrorCode(err) != drydock.EUNAVAILABLE || !drydock.IsRetryable(err) {
			t.Fatalf("error %v (code %q); want %s", err, drydock.ErrorCode(err), drydock.EUNAVAILABLE)
		}
		if n := len(srv.Requests()); n != 3 {
			t.Errorf("%d requests; want 1 + 2 retries", n)
		}
	})

	t.Run("RetriesTimeout", func(t *testing.T) {
		t.Parallel()
		srv, p := setup(t, Options{Turns: []Turn{{Text: "too late", Delay: 5 * time.Second}, {Text: "in time"}}}, Config{RequestTimeout: 300 * time.Millisecond})
		start := time.Now()
		res, err := complete(t, p, hello)
		if err != nil {
			t.Fatal(err)
		}
		if res.Text != "in time" || len(srv.Requests()) != 2 {
			t.Errorf("text %q after %d requests; want in time after 2", res.Text, len(srv.Requests()))
		}
		if d := time.Since(start); d > 4*time.Second {
			t.Errorf("took %s; the slow attempt was not cut at its timeout", d)
		}
	})

	t.Run("UnauthorizedIsClearAndNotRetried", func(t *testing.T) {
		t.Parallel()
		wrong := "sk-wrong-key-abcdefghijklmnop"
		srv, p := setup(t, Options{}, Config{APIKey: wrong})
		_, err := complete(t, p, hello)
		if drydock.ErrorCode(err) != drydock.EUNAUTHORIZED {
			t.Fatalf("error %v (code %q); want %s", err, drydock.ErrorCode(err), drydock.EUNAUTHORIZED)
		}
		msg := drydock.ErrorMessage(err)
		if !strings.Contains(msg, "_API_KEY") || !strings.Contains(msg, "401") {
			t.Errorf("message %q does not say which key to check", msg)
		}
		if strings.Contains(err.Error(), wrong[:8]) || strings.Contains(err.Error(), "***") {
			t.Errorf("error %q repeats (part of) the key", err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("%d requests; a 401 must not be retried", n)
		}
	})

	t.Run("KeepsFailing", func(t *testing.T) {
		t.Parallel()
		srv, p := setup(t, Options{Turns: Repeat(3, Turn{Fault: ServerError})}, Config{MaxRetries: 2})
		_, err := complete(t, p, hello)
		if drydock.ErrorCode(err) != drydock.EUNAVAILABLE || !drydock.IsRetryable(err) {
			t.Fatalf("error %v; want %s", err, drydock.EUNAVAILABLE)
		}
		if !strings.Contains(drydock.ErrorMessage(err), "500") {
			t.Errorf("message %q does not name the status", drydock.ErrorMessage(err))
		}
		if n := len(srv.Requests()); n != 3 {
			t.Errorf("%d requests; want 1 + 2 retries", n)
		}
	})

	t.Run("BadRequestSaysWhy", func(t *testing.T) {
		t.Parallel()
		srv, p := setup(t, Options{Turns: []Turn{{Fault: BadRequest, Text: "prompt is too long: 300000 tokens > 200000 maximum"}}}, Config{})
		_, err := complete(t, p, hello)
		if drydock.ErrorCode(err) != drydock.EINVALID || !strings.Contains(drydock.ErrorMessage(err), "prompt is too long") {
			t.Fatalf("error %v; want %s naming the reason", err, drydock.EINVALID)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("%d requests; a 400 must not be retried", n)
		}
	})

	t.Run("Cancel", func(t *testing.T) {
		t.Parallel()
		_, p := setup(t, Options{Turns: []Turn{{Text: "never", Delay: 20 * time.Second}}}, Config{})
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		_, err := p.Complete(ctx, &llm.Request{Model: Model, Messages: hello.Messages})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v; want context.Canceled", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("cancel took %s", d)
		}
	})

	t.Run("MalformedArgumentsSurvive", func(t *testing.T) {
		t.Parallel()
		// A model may produce arguments that are not a JSON object; the
		// provider must hand them on and still send a valid next request.
		srv, p := setup(t, Options{Turns: []Turn{
			{ToolCalls: []llm.ToolCall{{Name: "echo", Input: json.RawMessage(`["not","an","object"]`)}}},
			{Text: "sorry"},
		}}, Config{})
		req := &llm.Request{Tools: []llm.Tool{echoTool}, Messages: []llm.Message{{Role: llm.RoleUser, Text: "Echo."}}}
		res, err := complete(t, p, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.ToolCalls) != 1 {
			t.Fatalf("calls %+v", res.ToolCalls)
		}
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleAssistant, ToolCalls: res.ToolCalls},
			llm.Message{Role: llm.RoleUser, ToolResults: []llm.ToolResult{{CallID: res.ToolCalls[0].ID, Name: "echo", Output: "input must be an object", IsError: true}}})
		if _, err := complete(t, p, req); err != nil {
			t.Fatalf("request after malformed arguments: %v (%v)", err, srv.Problems())
		}
	})
}

func checkImage(t *testing.T, img llm.Image) int {
	t.Helper()
	if img.MediaType != "image/png" || !bytes.Equal(img.Data, PNG) {
		t.Errorf("image %s of %d bytes; want the test PNG", img.MediaType, len(img.Data))
	}
	return 1
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return cmp.Equal(x, y)
}
