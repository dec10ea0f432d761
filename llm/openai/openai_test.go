package openai_test

import (
	"strings"
	"testing"

	"github.com/drydockhq/drydock"

	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
	"github.com/drydockhq/drydock/llm/openai"
)

// factory builds providers that speak one of the two APIs to the scripted
// server (whose base URL is not OpenAI's, so auto would pick chat).
func factory(api string) llmtest.Factory {
	return func(t *testing.T, srv *llmtest.Server, cfg llmtest.Config) llm.Provider {
		p, err := openai.New(openai.Config{
			APIKey: cfg.APIKey, BaseURL: srv.OpenAIBaseURL(), API: api,
			MaxRetries: cfg.MaxRetries, RequestTimeout: cfg.RequestTimeout,
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
}

func TestConformance(t *testing.T) {
	t.Run("chat", func(t *testing.T) { llmtest.Run(t, factory(openai.APIChat)) })
	t.Run("responses", func(t *testing.T) {
		llmtest.Run(t, factory(openai.APIResponses))
		llmtest.RunResponses(t, factory(openai.APIResponses))
	})
}

func TestNoCredentials(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	_, err := openai.New(openai.Config{})
	if drydock.ErrorCode(err) != drydock.EINVALID || !strings.Contains(drydock.ErrorMessage(err), "OPENAI_API_KEY") {
		t.Errorf("error %v; want EINVALID naming OPENAI_API_KEY", err)
	}
}

// A local OpenAI-compatible server (Ollama, llama.cpp) needs a base URL
// and no key. (The SDK would take OPENAI_API_KEY from the process when
// Config has no key: cleared here.)
func TestBaseURLWithoutKey(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Options{Turns: []llmtest.Turn{{Text: "local"}}})
	t.Setenv("OPENAI_API_KEY", "")
	p, err := openai.New(openai.Config{BaseURL: srv.OpenAIBaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Complete(t.Context(), &llm.Request{Model: "llama3.1:8b", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}})
	if err != nil || res.Text != "local" {
		t.Fatalf("%+v %v", res, err)
	}
	if c := srv.Requests()[0].Credential; c != "" {
		t.Errorf("sent credential %q; want none", c)
	}
}

// NoToolCalls keeps the tools in the prompt (the prefix cache keys on it)
// and forbids calls with tool_choice.
func TestNoToolCalls(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.Options{Turns: []llmtest.Turn{{Text: "ok"}, {Text: "ok"}}})
	p, err := openai.New(openai.Config{APIKey: llmtest.TestKey, BaseURL: srv.OpenAIBaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	tools := []llm.Tool{{Name: "bash", InputSchema: []byte(`{"type":"object","properties":{"command":{"type":"string"}}}`)}}
	for _, no := range []bool{false, true} {
		req := &llm.Request{Model: "gpt-4.1", System: "sys", Tools: tools, Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}, NoToolCalls: no}
		if _, err := p.Complete(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	if reqs[0].ToolChoice != "" || reqs[1].ToolChoice != `"none"` {
		t.Errorf("tool_choice %q and %q; want none only with NoToolCalls", reqs[0].ToolChoice, reqs[1].ToolChoice)
	}
	if len(reqs[1].Tools) != 1 {
		t.Errorf("the tools were not sent with NoToolCalls")
	}
}

// The provider uses the key and base URL it is given, not the process's
// OPENAI_API_KEY or OPENAI_BASE_URL, which the SDK's client would apply by
// itself: the composition root (cmd/drydock) reads the environment.
func TestEnvironmentIsNotConsulted(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Options{Turns: []llmtest.Turn{{Text: "given"}}})
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment-0123456789")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	p, err := openai.New(openai.Config{BaseURL: srv.OpenAIBaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Complete(t.Context(), &llm.Request{Model: "llama3.1:8b", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}})
	if err != nil || res.Text != "given" {
		t.Fatalf("%+v %v", res, err)
	}
	if c := srv.Requests()[0].Credential; c != "" {
		t.Errorf("sent credential %q; want none (Config has no key)", c)
	}
}
