// Package openai is an llm.Provider on the official OpenAI Go SDK's chat
// completions with tool calling. A base URL (OPENAI_BASE_URL or
// Config.BaseURL) points it at any OpenAI-compatible server: vLLM, Ollama,
// llama.cpp, OpenRouter.
//
// Chat completions carry tool results as text only, so the images of a
// tool result travel in a user message right after the tool messages of
// that turn.
package openai
