package e2e_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// The real binary with the LLM agent: the production SDK clients talk to the
// scripted model server, whose planned tool calls act in the sandbox. The API
// key reaches neither the store, the events, the logs nor the archive.
func TestLLMAgentEndToEnd(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			const key = "sk-e2e-SECRET-0123456789abcdef"
			model := llmtest.NewServer(t, llmtest.Options{APIKey: key, Turns: []llmtest.Turn{
				{Text: "I will create the file.", ToolCalls: []llm.ToolCall{
					llmtest.Call("bash", `{"command": "mkdir -p app && echo 'hello from the agent' > app/hello.txt && cat app/hello.txt"}`),
				}},
				{ToolCalls: []llm.ToolCall{
					llmtest.Call("str_replace_based_edit_tool", `{"command": "str_replace", "path": "/workspace/app/hello.txt", "old_str": "hello", "new_str": "goodbye"}`),
				}},
				{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "Wrote app/hello.txt."}`)}},
			}})
			s := newServer(t)
			for i, a := range s.args {
				if a == "fake" && s.args[i-1] == "--agent" {
					s.args[i] = "llm"
				}
			}
			s.args = append(s.args, "--llm", provider, "--model", "test-model")
			env := []string{"OPENAI_API_KEY=", "OPENAI_BASE_URL=", "ANTHROPIC_API_KEY=", "ANTHROPIC_BASE_URL="}
			if provider == "openai" {
				env = append(env, "OPENAI_API_KEY="+key, "OPENAI_BASE_URL="+model.URL()+"/v1")
			} else {
				env = append(env, "ANTHROPIC_API_KEY="+key, "ANTHROPIC_BASE_URL="+model.URL())
			}
			s.env = env
			s.start()
			id := s.schedule(`{"task": "Create app/hello.txt saying hello, then change hello to goodbye."}`)
			j, _ := s.waitTerminal(id, time.Minute)
			if j.Status != drydock.StatusComplete || j.Steps < 3 || j.Summary != "Wrote app/hello.txt." || j.Usage.InputTokens == 0 {
				t.Fatalf("job: %s steps=%d summary=%q err=%q usage=%+v\n%s", j.Status, j.Steps, j.Summary, j.Error, j.Usage, s.logs)
			}
			_, archive := s.do("GET", "/v1/jobs/"+id+"/artifact.tar.gz", "", "")
			if !slices.Contains(tarGzNames(t, archive), "app/hello.txt") {
				t.Errorf("archive lacks app/hello.txt: %v", tarGzNames(t, archive))
			}
			var types []drydock.EventType
			var all bytes.Buffer
			for _, e := range s.events(id) {
				types = append(types, e.Type)
				all.Write(e.Data)
			}
			for _, want := range []drydock.EventType{drydock.EventModel, drydock.EventToolCall, drydock.EventObservation, drydock.EventUsage} {
				if !slices.Contains(types, want) {
					t.Errorf("no %s event", want)
				}
			}
			if !strings.Contains(all.String(), "hello from the agent") {
				t.Error("the bash observation is not in the events")
			}
			// The model saw the tool results it asked for.
			reqs := model.Requests()
			if len(reqs) != 3 || !strings.Contains(string(reqs[1].Body), "hello from the agent") {
				t.Errorf("model got %d requests; second lacks the bash output", len(reqs))
			}
			// The key is nowhere the server writes.
			if strings.Contains(all.String(), key) || strings.Contains(s.logs.String(), key) || bytes.Contains(archive, []byte(key)) {
				t.Error("the API key leaked into events, logs or the archive")
			}
			files, _ := filepath.Glob(filepath.Join(s.dataDir, "*"))
			for _, f := range files {
				if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(key)) {
					t.Errorf("the API key is in %s", f)
				}
			}
		})
	}
}

// With no provider configured, a job fails at once saying what to set.
func TestLLMAgentWithoutProviderFailsClearly(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	for i, a := range s.args {
		if a == "fake" && s.args[i-1] == "--agent" {
			s.args[i] = "llm"
		}
	}
	s.env = []string{"OPENAI_API_KEY=", "OPENAI_BASE_URL=", "ANTHROPIC_API_KEY=", "ANTHROPIC_BASE_URL=", "ANTHROPIC_AUTH_TOKEN="}
	s.start()
	id := s.schedule(`{"task": "anything"}`)
	j, _ := s.waitTerminal(id, 30*time.Second)
	if j.Status != drydock.StatusError || !strings.Contains(j.Error, "OPENAI_API_KEY") || !strings.Contains(j.Error, "ANTHROPIC_API_KEY") {
		t.Fatalf("job: %s %q", j.Status, j.Error)
	}
}
