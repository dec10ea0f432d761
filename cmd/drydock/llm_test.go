package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent"
)

// The server picks the provider and its credentials from its environment
// (the agent and the providers read none), with the rules the README and
// --llm's help state.
func TestLLMFromEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		llm  string // --llm
		env  map[string]string
		want agent.Config
	}{
		{name: "nothing set", want: agent.Config{}},
		{name: "an Anthropic key comes first",
			env:  map[string]string{"ANTHROPIC_API_KEY": "sk-ant-1", "ANTHROPIC_BASE_URL": "http://a", "OPENAI_API_KEY": "sk-oa-1"},
			want: agent.Config{Provider: "anthropic", APIKey: "sk-ant-1", BaseURL: "http://a"}},
		{name: "an Anthropic bearer token",
			env:  map[string]string{"ANTHROPIC_AUTH_TOKEN": "tok-1"},
			want: agent.Config{Provider: "anthropic", AuthToken: "tok-1"}},
		{name: "the key wins over the token",
			env:  map[string]string{"ANTHROPIC_API_KEY": "sk-ant-1", "ANTHROPIC_AUTH_TOKEN": "tok-1"},
			want: agent.Config{Provider: "anthropic", APIKey: "sk-ant-1"}},
		{name: "OpenAI by its key",
			env:  map[string]string{"OPENAI_API_KEY": "sk-oa-1", "ANTHROPIC_BASE_URL": "http://a"},
			want: agent.Config{Provider: "openai", APIKey: "sk-oa-1"}},
		{name: "an OpenAI-compatible server needs no key",
			env:  map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"},
			want: agent.Config{Provider: "openai", BaseURL: "http://127.0.0.1:11434/v1"}},
		{name: "--llm openai takes OpenAI's variables even when Anthropic's are set",
			llm:  "openai",
			env:  map[string]string{"ANTHROPIC_API_KEY": "sk-ant-1", "OPENAI_API_KEY": "sk-oa-1", "OPENAI_BASE_URL": "http://o"},
			want: agent.Config{Provider: "openai", APIKey: "sk-oa-1", BaseURL: "http://o"}},
		{name: "--llm anthropic without its variables has no credentials",
			llm:  "anthropic",
			env:  map[string]string{"OPENAI_API_KEY": "sk-oa-1"},
			want: agent.Config{Provider: "anthropic"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			environ := []string{"HOME=/root"}
			got := llmFromEnv(agent.Config{Provider: tc.llm, Model: "m"}, func(k string) string { return tc.env[k] }, environ)
			if got.Provider != tc.want.Provider || got.APIKey != tc.want.APIKey || got.AuthToken != tc.want.AuthToken || got.BaseURL != tc.want.BaseURL {
				t.Errorf("provider %q key %q token %q base %q; want %q %q %q %q", got.Provider, got.APIKey, got.AuthToken, got.BaseURL,
					tc.want.Provider, tc.want.APIKey, tc.want.AuthToken, tc.want.BaseURL)
			}
			if got.Model != "m" || !slices.Equal(got.Environ, environ) {
				t.Errorf("model %q environ %v; want the rest of the config kept and the environment passed on", got.Model, got.Environ)
			}
		})
	}
}

// Without any provider variable the server still starts, and the agent
// says what to set: the message users saw before the environment moved
// out of the agent.
func TestServerWithoutLLMSaysWhatToSet(t *testing.T) {
	t.Parallel()
	a, err := agent.New(llmFromEnv(agent.Config{}, func(string) string { return "" }, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	msg := drydock.ErrorMessage(a.Check())
	for _, want := range []string{"no LLM provider configured", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "--llm openai|anthropic"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Check: %q; want it to name %q", msg, want)
		}
	}
	a, err = agent.New(llmFromEnv(agent.Config{}, func(k string) string { return map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}[k] }, nil), nil)
	if err != nil || a.Check() != nil || a.Provider() != agent.ProviderOpenAI {
		t.Errorf("with OPENAI_BASE_URL: provider %q, check %v, err %v; want openai ready", a.Provider(), a.Check(), err)
	}
}
