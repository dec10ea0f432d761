package llm

import (
	"bytes"
	"context"
	"encoding/json"
)

// Provider sends a conversation to a model and returns its next turn.
// Implementations retry transient failures (429, 5xx, timeouts, dropped
// connections) themselves; an error they return is final for this request
// and is an *drydock.Error (see Classify) unless ctx ended.
type Provider interface {
	// Name is the provider's name: "openai" or "anthropic".
	Name() string
	// Complete asks the model for its next turn.
	Complete(ctx context.Context, req *Request) (*Response, error)
}

// Role says who wrote a message.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one turn of the conversation. A user message holds, in this
// order, the results of the previous assistant message's tool calls, then
// text and images; an assistant message holds its reasoning, text and tool
// calls.
type Message struct {
	Role        Role
	ToolResults []ToolResult // user: one per call of the previous assistant turn, in order
	Text        string
	Images      []Image    // user
	ToolCalls   []ToolCall // assistant
	// Reasoning is what the provider attached to this assistant turn
	// (Response.Reasoning), sent back with it unchanged.
	Reasoning *Reasoning
}

// ToolCall is the model asking to run a tool. Input is a JSON object.
type ToolCall struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ToolResult answers the ToolCall with the same ID.
type ToolResult struct {
	CallID  string
	Name    string // the tool's name; OpenAI-compatible servers sometimes want it
	Output  string
	IsError bool
	Images  []Image
}

// Image is an encoded picture (PNG, JPEG, GIF or WebP).
type Image struct {
	MediaType string // e.g. "image/png"
	Data      []byte
}

// Tool describes a tool the model may call. InputSchema is a JSON Schema
// of type "object".
type Tool struct {
	Name        string
	Description string
	InputSchema json.RawMessage
	// Native, when set, says the tool implements a provider's built-in
	// tool: a provider that offers the built-in for the model sends it
	// instead of Name, Description and InputSchema, and the model's calls
	// then follow the built-in's input schema, which the tool accepts.
	Native *NativeTool
}

// Kinds of built-in tools (Anthropic's bash, text editor and computer).
const (
	NativeBash       = "bash"
	NativeTextEditor = "text_editor"
	NativeComputer   = "computer"
)

// NativeTool describes the built-in tool a Tool stands for.
type NativeTool struct {
	Kind string // NativeBash, NativeTextEditor or NativeComputer
	// DisplayWidth and DisplayHeight are the computer's screen as the
	// model sees it: the size of its screenshots, and so the space of the
	// coordinates it sends.
	DisplayWidth, DisplayHeight int
	// Zoom says the computer tool implements the zoom action (a region of
	// the screen, enlarged), which newer built-in versions offer.
	Zoom bool
	// Type is the versioned type a provider sent (e.g. "bash_20250124");
	// set by decoders of requests (llmtest), left empty by callers.
	Type string
}

// Request is one call to the model.
type Request struct {
	Model    string
	System   string
	Messages []Message
	Tools    []Tool
	// MaxTokens caps the reply; 0 means the provider's default.
	MaxTokens int
	// NoToolCalls asks for a reply without tool calls while Tools are
	// still sent, so that the request shares its prefix (and the
	// provider's prompt cache) with the requests that offer them. Where
	// forbidding calls would change that prefix's cache (Anthropic's
	// tool_choice invalidates its cached messages) the provider leaves
	// the choice to the model, so the caller must still handle calls.
	NoToolCalls bool
}

// StopReason says why the model stopped.
type StopReason string

const (
	StopEndTurn   StopReason = "end_turn"   // the model finished its turn
	StopToolUse   StopReason = "tool_use"   // the model wants its tool calls run
	StopMaxTokens StopReason = "max_tokens" // the reply hit MaxTokens
	StopOther     StopReason = "other"      // refusal, content filter, ...
)

// Response is the model's turn.
type Response struct {
	Model      string // as the server reports it
	Text       string
	ToolCalls  []ToolCall
	StopReason StopReason
	Usage      Usage
	// Reasoning, when set, goes back with this turn (Message.Reasoning).
	Reasoning *Reasoning
}

// Usage counts the tokens of one request. InputTokens excludes the tokens
// read from or written to the prompt cache, which are counted apart (the
// Anthropic convention; OpenAI's prompt_tokens are split accordingly), so
// the prompt's size is InputTokens + CacheReadTokens + CacheWriteTokens.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	// ReasoningTokens are the part of OutputTokens the model spent
	// thinking (billed as output; counted apart for people and budgets).
	ReasoningTokens int64 `json:"reasoning_tokens,omitempty"`
}

// Total is every token the request processed.
func (u Usage) Total() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// ObjectInput returns a tool call's input as a JSON object, which both APIs
// require when the call is sent back in the conversation. Anything else
// (a model's malformed arguments) is wrapped as {"raw_arguments": ...}.
func ObjectInput(in json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(in, &obj) == nil && obj != nil {
		return in
	}
	if len(bytes.TrimSpace(in)) == 0 {
		return json.RawMessage("{}")
	}
	raw := in
	if !json.Valid(in) {
		raw, _ = json.Marshal(string(in))
	}
	b, _ := json.Marshal(map[string]json.RawMessage{"raw_arguments": raw})
	return b
}
