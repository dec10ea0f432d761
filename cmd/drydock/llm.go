package main

import (
	"cmp"

	"github.com/drydockhq/drydock/agent"
)

// llmFromEnv completes the agent's provider settings from the server's
// environment. This is the one place that reads it for the model: package
// agent and the providers (llm/openai, llm/anthropic) are given values, so
// a program that embeds them decides where its credentials come from.
//
// With no provider named (--llm), ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN
// picks Anthropic, then OPENAI_API_KEY or OPENAI_BASE_URL picks OpenAI;
// with none, the agent reports that no provider is configured. The named
// provider's credentials and base URL come from its variables unless cfg
// holds them already. environ (os.Environ's form) is passed on for the
// agent to mask the values of its secret-looking variables.
func llmFromEnv(cfg agent.Config, getenv func(string) string, environ []string) agent.Config {
	if cfg.Provider == "" {
		switch {
		case getenv("ANTHROPIC_API_KEY") != "" || getenv("ANTHROPIC_AUTH_TOKEN") != "":
			cfg.Provider = agent.ProviderAnthropic
		case getenv("OPENAI_API_KEY") != "" || getenv("OPENAI_BASE_URL") != "":
			cfg.Provider = agent.ProviderOpenAI
		}
	}
	switch cfg.Provider {
	case agent.ProviderAnthropic:
		cfg.APIKey = cmp.Or(cfg.APIKey, getenv("ANTHROPIC_API_KEY"))
		if cfg.APIKey == "" {
			cfg.AuthToken = cmp.Or(cfg.AuthToken, getenv("ANTHROPIC_AUTH_TOKEN"))
		}
		cfg.BaseURL = cmp.Or(cfg.BaseURL, getenv("ANTHROPIC_BASE_URL"))
	case agent.ProviderOpenAI:
		cfg.APIKey = cmp.Or(cfg.APIKey, getenv("OPENAI_API_KEY"))
		cfg.BaseURL = cmp.Or(cfg.BaseURL, getenv("OPENAI_BASE_URL"))
	}
	cfg.Environ = environ
	return cfg
}
