// Package openai is an llm.Provider on the official OpenAI Go SDK that
// speaks two wire APIs, chosen per request (UsesResponses, Config.API):
// the Responses API for OpenAI's reasoning and newer models, and Chat
// Completions for older models and for any other base URL
// (Config.BaseURL): vLLM, Ollama, llama.cpp, OpenRouter. The key and base
// URL come from Config; the server's composition root (cmd/drydock) fills
// it from OPENAI_API_KEY and OPENAI_BASE_URL, which the SDK's client would
// otherwise apply by itself. (The client still applies the optional
// OPENAI_ORG_ID, OPENAI_PROJECT_ID and OPENAI_CUSTOM_HEADERS of the
// process, as it always did.)
//
// On Responses nothing is stored at OpenAI (store=false): a reasoning
// model's encrypted reasoning items come back as the turn's llm.Reasoning and
// go back with the turn, in order, in every later request. Tool results
// carry their images inside function_call_output. Chat completions carry
// tool results as text only, so there the images of a tool result travel
// in a user message right after the tool messages of that turn.
package openai
