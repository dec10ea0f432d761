package tokens

import "github.com/drydockhq/drydock/llm"

// Framing the chat formats add around the parts of a request, in tokens:
// OpenAI documents 3 per message and 3 to prime the reply; tool calls and
// results carry ids and type tags. These are rounded up, since a Meter only
// corrects them after the first reply.
const (
	perRequest    = 3
	perMessage    = 4
	perToolCall   = 8
	perToolResult = 8
	perTool       = 10
	// ImageTokens is what one image is counted as: about what both APIs
	// charge for a screenshot of at most 1280x800 (Anthropic: width*height
	// /750, capped near 1,600; OpenAI: 85 + 170 per 512-pixel tile).
	ImageTokens = 1600
)

// Request counts a whole request: system prompt, tool definitions and
// messages.
func Request(c Counter, req *llm.Request) int {
	n := perRequest + Tools(c, req.Tools) + Messages(c, req.Messages)
	if req.System != "" {
		n += perMessage + c.Count(req.System)
	}
	return n
}

// Tools counts tool definitions.
func Tools(c Counter, tools []llm.Tool) int {
	n := 0
	for _, t := range tools {
		n += perTool + c.Count(t.Name) + c.Count(t.Description) + c.Count(string(t.InputSchema))
	}
	return n
}

// Messages counts a conversation.
func Messages(c Counter, msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += Message(c, m)
	}
	return n
}

// Message counts one message.
func Message(c Counter, m llm.Message) int {
	n := perMessage + c.Count(m.Text) + ImageTokens*len(m.Images)
	for _, th := range m.Reasoning.Thinking() {
		// Sent back, thinking is read as input; a redacted block's data is
		// base64 of about as many bytes as its reasoning.
		n += c.Count(th.Text) + len(th.Redacted)*3/4/4
	}
	for _, r := range m.ToolResults {
		n += ToolResult(c, r)
	}
	for _, tc := range m.ToolCalls {
		n += ToolCall(c, tc)
	}
	return n
}

// ToolCall counts one tool call of an assistant message.
func ToolCall(c Counter, tc llm.ToolCall) int {
	return perToolCall + c.Count(tc.ID) + c.Count(tc.Name) + c.Count(string(tc.Input))
}

// ToolResult counts one tool result.
func ToolResult(c Counter, r llm.ToolResult) int {
	return perToolResult + c.Count(r.CallID) + c.Count(r.Output) + ImageTokens*len(r.Images)
}
