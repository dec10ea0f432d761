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
// thinking blocks come back as the turn's llm.Reasoning (llm.Thinking
// blocks, see llm.ThinkingReasoning) and must go back, unchanged, with
// their turn (llm.Message.Reasoning).
//
// Credentials and the base URL come from Config only: Config.APIKey
// (x-api-key) or Config.AuthToken (bearer). The package reads no
// environment, nor lets the SDK read it (profiles, federation,
// ANTHROPIC_*): the server's composition root (cmd/drydock) fills Config
// from ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN and ANTHROPIC_BASE_URL.
package anthropic
