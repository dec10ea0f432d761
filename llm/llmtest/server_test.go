package llmtest

import (
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, url, body string) int {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The server refuses what the real APIs refuse, so that a broken prompt
// builder fails its tests instead of passing against a lenient fake.
func TestServerRefusesInvalidConversations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, body, problem string
	}{
		{"openai unanswered call", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}]},{"role":"user","content":"next"}]}`,
			"must be followed by tool messages"},
		{"openai orphan tool message", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c9","content":"x"}]}`,
			"must be a response to a preceding message"},
		{"openai no model", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, "model is required"},
		{"anthropic roles out of order", "/v1/messages",
			`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`,
			"roles must alternate"},
		{"anthropic missing tool_result", "/v1/messages",
			`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{}}]},{"role":"user","content":"b"}]}`,
			"without `tool_result` blocks"},
		{"anthropic tool_result after text", "/v1/messages",
			`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{}}]},{"role":"user","content":[{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`,
			"must come first"},
		{"anthropic wrong tool_use_id", "/v1/messages",
			`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"ok"}]}]}`,
			"unexpected `tool_use_id`"},
		{"anthropic empty text", "/v1/messages",
			`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"  "}]}]}`,
			"non-whitespace text"},
		{"anthropic no max_tokens", "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"a"}]}`, "max_tokens"},
		{"anthropic ends with assistant", "/v1/messages",
			`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`,
			"last message must be a user message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := NewServer(t, Options{AllowProblems: true, Turns: []Turn{{Text: "unused"}}})
			if code := post(t, srv.URL()+tt.path, tt.body); code != http.StatusBadRequest {
				t.Errorf("status %d; want 400", code)
			}
			probs := srv.Problems()
			if len(probs) == 0 || !strings.Contains(strings.Join(probs, "\n"), tt.problem) {
				t.Errorf("problems %q; want one containing %q", probs, tt.problem)
			}
			if srv.Remaining() != 1 {
				t.Errorf("an invalid request used a turn of the script")
			}
		})
	}
}

func TestServerScriptExhausted(t *testing.T) {
	t.Parallel()
	srv := NewServer(t, Options{AllowProblems: true})
	if code := post(t, srv.URL()+"/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"}]}`); code != 400 {
		t.Errorf("status %d; want 400", code)
	}
	if p := srv.Problems(); len(p) != 1 || !strings.Contains(p[0], "no turn left") {
		t.Errorf("problems %q", p)
	}
}

func TestServerRateLimitSaysWhenToRetry(t *testing.T) {
	t.Parallel()
	srv := NewServer(t, Options{Turns: []Turn{{Fault: RateLimit}}})
	resp, err := http.Post(srv.OpenAIBaseURL()+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"a"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After-Ms") != "10" {
		t.Errorf("status %d retry-after-ms %q", resp.StatusCode, resp.Header.Get("Retry-After-Ms"))
	}
}
