package e2e_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// The real binary with --openai-api responses and a reasoning effort: a
// reasoning model's steps reach the scripted Responses endpoint, each
// prompt carries the encrypted reasoning of every earlier step (the server
// refuses one that drops the previous), and the usage counts reasoning.
func TestResponsesAPIEndToEnd(t *testing.T) {
	t.Parallel()
	const key = "sk-e2e-SECRET-responses-0123456789"
	model := llmtest.NewServer(t, llmtest.Options{APIKey: key, Turns: []llmtest.Turn{
		{Reasoning: "Create the file first.", Text: "Creating it.", ToolCalls: []llm.ToolCall{
			llmtest.Call("bash", `{"command": "echo 'thought through' > hello.txt"}`),
		}},
		{Reasoning: "It exists; finish.", ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "Wrote hello.txt."}`)}},
	}})
	s := newServer(t)
	for i, a := range s.args {
		if a == "fake" && s.args[i-1] == "--agent" {
			s.args[i] = "llm"
		}
	}
	s.args = append(s.args, "--llm", "openai", "--model", "gpt-5-mini", "--openai-api", "responses", "--openai-reasoning-effort", "gpt-5=high")
	s.env = []string{"OPENAI_API_KEY=" + key, "OPENAI_BASE_URL=" + model.OpenAIBaseURL(), "ANTHROPIC_API_KEY=", "ANTHROPIC_BASE_URL=", "ANTHROPIC_AUTH_TOKEN="}
	s.start()
	id := s.schedule(`{"task": "Write hello.txt."}`)
	j, _ := s.waitTerminal(id, time.Minute)
	if j.Status != drydock.StatusComplete || j.Summary != "Wrote hello.txt." {
		t.Fatalf("job: %s summary=%q err=%q\n%s", j.Status, j.Summary, j.Error, s.logs)
	}
	reqs := model.Requests()
	if len(reqs) != 2 || reqs[1].API != "openai-responses" {
		t.Fatalf("%d requests; want 2 on the Responses API", len(reqs))
	}
	if !slices.Equal(reqs[1].Reasoning, []string{"rs_llmtest_1"}) || reqs[1].ReasoningEffort != "high" {
		t.Errorf("second request sent back reasoning %v with effort %q; want rs_llmtest_1, high", reqs[1].Reasoning, reqs[1].ReasoningEffort)
	}
	var all bytes.Buffer
	for _, e := range s.events(id) {
		all.Write(e.Data)
	}
	if !bytes.Contains(all.Bytes(), []byte(`"reasoning_tokens"`)) {
		t.Error("no usage event counts reasoning tokens")
	}
	if bytes.Contains(all.Bytes(), []byte(key)) || strings.Contains(s.logs.String(), key) {
		t.Error("the API key leaked into events or logs")
	}
}
