// Package llmtest is a scripted model server and the conformance suite
// every llm.Provider passes.
//
// The Server is a real HTTP server on 127.0.0.1 that speaks the OpenAI
// chat completions wire format (POST /v1/chat/completions), OpenAI's
// Responses API (POST /v1/responses, store=false, with encrypted reasoning
// items that must come back: responses.go) and the Anthropic Messages
// format (POST /v1/messages), non-streaming. It answers
// each request with the next planned Turn (text and tool calls, or a fault:
// 429, 500, 529, 401, a dropped connection, a 200 whose body is cut off
// half way, a slow answer), or with what a function decides from the request, and records every request it received,
// decoded back into provider-neutral messages, so tests can check what the
// model was shown. Like the real APIs it refuses malformed conversations
// with 400 (a tool result without its call, calls left unanswered, roles
// out of order, empty text blocks, ...) and records why, so a provider or a
// prompt builder that breaks the rules fails its tests.
//
// Unless a Turn sets its usage, the usage reported is the request's size
// (body bytes / 4) split the way the provider's prompt cache would split it
// (cache.go): Anthropic's cache_read_input_tokens and
// cache_creation_input_tokens at cache_control breakpoints, OpenAI's
// automatic cached_tokens, so that a client's cache hit ratio can be
// measured.
//
// Production code reaches it through the unchanged SDK clients: point
// OpenAI's base URL at Server.OpenAIBaseURL() or Anthropic's at
// Server.AnthropicBaseURL(). Besides tests, it serves demos and the replay
// command.
//
// Run(t, factory) is the conformance suite: each provider's tests call it
// with a function that builds the provider against a given server. Every
// suite here runs one parallel subtest per behaviour, each a small method
// with a scripted server of its own, so a failure names the behaviour.
// RunAnthropicNative adds Anthropic's own dialect: the server checks
// built-in tools (name, beta flag, display size) and the thinking option,
// signs the thinking blocks a Turn plays, and refuses with 400, like the
// API, a request that drops or alters the last tool-use turn's thinking.
// RunResponses(t, factory) adds the cases of the Responses dialect.
package llmtest
