// Package llm is the boundary between the agent and the language models: a
// small Provider interface, the provider-neutral messages, tools and usage
// it speaks, model facts (context window, image input, prices), and the
// mapping of provider failures to drydock error codes.
//
// Implementations live in packages named after their SDK: llm/openai (chat
// completions; any OpenAI-compatible server through its base URL) and
// llm/anthropic (the Messages API with prompt caching). Both pass the
// conformance suite in llm/llmtest, whose scripted model server speaks both
// wire formats on 127.0.0.1.
//
// A conversation is a list of Messages that alternate between the user and
// the assistant. An assistant message carries the model's text and its tool
// calls; the next user message starts with one ToolResult per call, in the
// same order, then any text and images. Each provider turns that into its
// own wire shape (OpenAI: one "tool" message per result and a user message
// for images; Anthropic: tool_result blocks first in the user turn).
package llm
