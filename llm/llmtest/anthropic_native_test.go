package llmtest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/drydockhq/drydock/llm"
)

func postBeta(t *testing.T, url, beta, body string) int {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if beta != "" {
		req.Header.Set("Anthropic-Beta", beta)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A tool-use loop with thinking on, whose last assistant turn is given.
func thinkingLoop(assistant string) string {
	return `{"model":"m","max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[` +
		assistant + `,{"type":"tool_use","id":"t1","name":"bash","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`
}

// The server checks the built-in tools and thinking blocks as the Messages
// API does, so that a client that drops a beta flag, a display size or a
// turn's thinking fails its tests.
func TestServerRefusesBrokenNativeDialect(t *testing.T) {
	t.Parallel()
	good := SignThinking(llm.Thinking{Text: "plan"})
	block := func(text, sig string) string {
		return fmt.Sprintf(`{"type":"thinking","thinking":%q,"signature":%q}`, text, sig)
	}
	tests := []struct {
		name, beta, body, problem string
	}{
		{"computer without its beta", "",
			`{"model":"m","max_tokens":10,"tools":[{"type":"computer_20250124","name":"computer","display_width_px":1280,"display_height_px":800}],"messages":[{"role":"user","content":"a"}]}`,
			`needs the beta flag "computer-use-2025-01-24"`},
		{"computer without a display size", "computer-use-2025-01-24",
			`{"model":"m","max_tokens":10,"tools":[{"type":"computer_20250124","name":"computer"}],"messages":[{"role":"user","content":"a"}]}`,
			"display_width_px and display_height_px: Field required"},
		{"newer computer with the older beta", "computer-use-2025-01-24",
			`{"model":"m","max_tokens":10,"tools":[{"type":"computer_20251124","name":"computer","display_width_px":1280,"display_height_px":800}],"messages":[{"role":"user","content":"a"}]}`,
			`needs the beta flag "computer-use-2025-11-24"`},
		{"zoom on the older computer", "computer-use-2025-01-24",
			`{"model":"m","max_tokens":10,"tools":[{"type":"computer_20250124","name":"computer","display_width_px":1280,"display_height_px":800,"enable_zoom":true}],"messages":[{"role":"user","content":"a"}]}`,
			"enable_zoom: Extra inputs are not permitted"},
		{"built-in bash renamed", "",
			`{"model":"m","max_tokens":10,"tools":[{"type":"bash_20250124","name":"shell"}],"messages":[{"role":"user","content":"a"}]}`,
			`must be named "bash"`},
		{"built-in editor with a schema", "",
			`{"model":"m","max_tokens":10,"tools":[{"type":"text_editor_20250728","name":"str_replace_based_edit_tool","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"a"}]}`,
			"takes no input_schema"},
		{"unknown tool type", "",
			`{"model":"m","max_tokens":10,"tools":[{"type":"computer_20991231","name":"computer"}],"messages":[{"role":"user","content":"a"}]}`,
			"does not match any of the expected tags"},
		{"budget under the minimum", "",
			`{"model":"m","max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":500},"messages":[{"role":"user","content":"a"}]}`,
			"greater than or equal to 1024"},
		{"budget not under max_tokens", "",
			`{"model":"m","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[{"role":"user","content":"a"}]}`,
			"`max_tokens` must be greater"},
		{"last turn's thinking dropped", "", thinkingLoop(`{"type":"text","text":"running"}`),
			"must start with a thinking block"},
		{"last turn's thinking altered", "", thinkingLoop(block(good.Text+" and more", good.Signature)),
			"Invalid `signature` in `thinking` block"},
		{"thinking signed by someone else", "", thinkingLoop(block("plan", "c2lnbmF0dXJl")),
			"Invalid `signature`"},
		{"redacted thinking forged", "", thinkingLoop(`{"type":"redacted_thinking","data":"llmtest:cGxhbg==.AAAA"}`),
			"Invalid `data` in `redacted_thinking` block"},
		{"thinking marked for the cache", "", thinkingLoop(strings.TrimSuffix(block(good.Text, good.Signature), "}") + `,"cache_control":{"type":"ephemeral"}}`),
			"cache_control cannot be set for thinking blocks"},
		{"thinking in a user message", "",
			`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[` + block(good.Text, good.Signature) + `]}]}`,
			"only allowed in assistant messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := NewServer(t, Options{AllowProblems: true, Turns: []Turn{{Text: "unused"}}})
			if code := postBeta(t, srv.URL()+"/v1/messages", tt.beta, tt.body); code != http.StatusBadRequest {
				t.Errorf("status %d; want 400", code)
			}
			probs := srv.Problems()
			if len(probs) == 0 || !strings.Contains(strings.Join(probs, "\n"), tt.problem) {
				t.Errorf("problems %q; want one containing %q", probs, tt.problem)
			}
		})
	}
}

func TestServerAcceptsNativeDialect(t *testing.T) {
	t.Parallel()
	good := SignThinking(llm.Thinking{Text: "plan"})
	red := SignThinking(llm.Thinking{Redacted: "secret plan"})
	srv := NewServer(t, Options{Turns: Repeat(3, Turn{Text: "ok"})})
	for _, body := range []string{
		thinkingLoop(fmt.Sprintf(`{"type":"redacted_thinking","data":%q},{"type":"thinking","thinking":%q,"signature":%q}`, red.Redacted, good.Text, good.Signature)),
		// Thinking off: the blocks of earlier turns may stay.
		strings.Replace(thinkingLoop(`{"type":"text","text":"running"}`), `"thinking":{"type":"enabled","budget_tokens":2048},`, "", 1),
		// Interleaved thinking lets the budget exceed max_tokens.
		`{"model":"m","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":4096},"tools":[{"type":"computer_20250124","name":"computer","display_width_px":1280,"display_height_px":800}],"messages":[{"role":"user","content":"a"}]}`,
	} {
		if code := postBeta(t, srv.URL()+"/v1/messages", "computer-use-2025-01-24, "+Interleaved, body); code != http.StatusOK {
			t.Errorf("status %d for %s (%v)", code, body, srv.Problems())
		}
	}
	r := srv.Requests()[0]
	if got := r.Messages[1].Reasoning.Thinking(); len(got) != 2 || got[0] != red || got[1] != good {
		t.Errorf("thinking read back as %+v", got)
	}
}
