// Package anthropic is an llm.Provider on the official Anthropic Go SDK's
// Messages API with tools and prompt caching: cache_control marks the
// system prompt (which caches the tool definitions before it too) and the
// last two user turns, so each request reads the prefix the previous one
// wrote and writes one step further.
//
// Requests go to the Messages API's beta surface, which takes Claude's
// built-in tools: a tool that declares one (llm.Tool.Native) goes as the
// versioned type the model was trained on (llm.Model's BashTool,
// EditorTool, ComputerTool), with the computer-use beta flag, and as a
// custom tool to other models. Models that can think do, with
// Config.ThinkingBudget or their default budget on top of max_tokens; the
// thinking blocks come back in llm.Response.Thinking and must go back,
// unchanged, with their turn (llm.Message.Thinking).
//
// Credentials come from Config, else ANTHROPIC_API_KEY (x-api-key) or
// ANTHROPIC_AUTH_TOKEN (bearer); the base URL from Config, else
// ANTHROPIC_BASE_URL. The SDK's other credential sources (profiles, federation)
// are not consulted, so what the server uses is what its environment says.
package anthropic
