// Package anthropic is an llm.Provider on the official Anthropic Go SDK's
// Messages API with tools and prompt caching: cache_control marks the
// system prompt (which caches the tool definitions before it too) and the
// last two user turns, so each request reads the prefix the previous one
// wrote and writes one step further.
//
// Credentials come from Config, else ANTHROPIC_API_KEY (x-api-key) or
// ANTHROPIC_AUTH_TOKEN (bearer); the base URL from Config, else
// ANTHROPIC_BASE_URL. The SDK's other credential sources (profiles, federation)
// are not consulted, so what the server uses is what its environment says.
package anthropic
