package llmtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/drydockhq/drydock/llm"
)

// openaiAPI is the chat completions wire format.
type openaiAPI struct{}

func (openaiAPI) name() string     { return "openai" }
func (openaiAPI) idPrefix() string { return "call_" }

func (openaiAPI) credential(h http.Header) string {
	return strings.TrimPrefix(h.Get("Authorization"), "Bearer ")
}

type oaRequest struct {
	Model               string          `json:"model"`
	Messages            []oaMessage     `json:"messages"`
	Tools               []oaTool        `json:"tools"`
	MaxCompletionTokens int             `json:"max_completion_tokens"`
	MaxTokens           int             `json:"max_tokens"`
	Stream              bool            `json:"stream"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
}

type oaMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []oaToolCall    `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type oaToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type oaPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func (openaiAPI) decode(body []byte, req *Request) {
	var in oaRequest
	if err := json.Unmarshal(body, &in); err != nil {
		req.Problems = append(req.Problems, "body is not a chat completions request: "+err.Error())
		return
	}
	bad := func(format string, args ...any) { req.Problems = append(req.Problems, fmt.Sprintf(format, args...)) }
	req.Model = in.Model
	req.MaxTokens = max(in.MaxCompletionTokens, in.MaxTokens)
	req.ToolChoice = string(in.ToolChoice)
	if in.Model == "" {
		bad("model is required")
	}
	if in.Stream {
		bad("llmtest does not stream")
	}
	if len(in.Messages) == 0 {
		bad("messages must not be empty")
	}
	for i, t := range in.Tools {
		if t.Type != "function" {
			bad("tools[%d].type is %q, want function", i, t.Type)
		}
		if !toolName.MatchString(t.Function.Name) {
			bad("tools[%d].function.name %q is invalid", i, t.Function.Name)
		}
		if len(t.Function.Parameters) > 0 && checkObject(t.Function.Parameters) != nil {
			bad("tools[%d].function.parameters must be a JSON schema object", i)
		}
		req.Tools = append(req.Tools, llm.Tool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: t.Function.Parameters})
	}

	// pending holds the calls of the last assistant message that still
	// await their tool message; names maps every call id to its tool.
	var pending []string
	names := map[string]string{}
	var cur *llm.Message // the user turn being assembled
	flush := func() {
		if cur != nil {
			req.Messages = append(req.Messages, *cur)
			cur = nil
		}
	}
	user := func() *llm.Message {
		if cur == nil {
			cur = &llm.Message{Role: llm.RoleUser}
		}
		return cur
	}
	for i, m := range in.Messages {
		if m.Role != "tool" && len(pending) > 0 {
			bad("messages[%d]: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id' (missing %s)", i, strings.Join(pending, ", "))
			pending = nil
		}
		switch m.Role {
		case "system", "developer":
			text, _, err := oaContent(m.Content)
			if err != nil {
				bad("messages[%d]: %v", i, err)
			}
			req.System = joinText(req.System, text)
		case "user":
			text, images, err := oaContent(m.Content)
			if err != nil {
				bad("messages[%d]: %v", i, err)
			}
			u := user()
			u.Text = joinText(u.Text, text)
			u.Images = append(u.Images, images...)
		case "assistant":
			flush()
			text, _, err := oaContent(m.Content)
			if err != nil {
				bad("messages[%d]: %v", i, err)
			}
			if text == "" && len(m.ToolCalls) == 0 {
				bad("messages[%d]: an assistant message needs content or tool_calls", i)
			}
			am := llm.Message{Role: llm.RoleAssistant, Text: text}
			for j, c := range m.ToolCalls {
				if c.ID == "" || c.Type != "function" {
					bad("messages[%d].tool_calls[%d]: id and type function are required", i, j)
				}
				if checkObject(json.RawMessage(c.Function.Arguments)) != nil {
					bad("messages[%d].tool_calls[%d].function.arguments must be a JSON object in a string", i, j)
				}
				names[c.ID] = c.Function.Name
				pending = append(pending, c.ID)
				am.ToolCalls = append(am.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Function.Name, Input: json.RawMessage(c.Function.Arguments)})
			}
			req.Messages = append(req.Messages, am)
		case "tool":
			k := indexOf(pending, m.ToolCallID)
			if k < 0 {
				bad("messages[%d]: messages with role 'tool' must be a response to a preceding message with 'tool_calls' (tool_call_id %q)", i, m.ToolCallID)
			} else {
				pending = append(pending[:k], pending[k+1:]...)
			}
			text, _, err := oaContent(m.Content)
			if err != nil {
				bad("messages[%d]: %v", i, err)
			}
			u := user()
			if u.Text != "" || len(u.Images) > 0 {
				bad("messages[%d]: a tool message follows a user message in the same turn", i)
			}
			u.ToolResults = append(u.ToolResults, llm.ToolResult{CallID: m.ToolCallID, Name: names[m.ToolCallID], Output: text, IsError: strings.HasPrefix(text, "Error: ")})
		default:
			bad("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	if len(pending) > 0 {
		bad("the last assistant message's tool calls %s have no tool messages", strings.Join(pending, ", "))
	}
	flush()
}

// oaContent reads a content field: a string, null, or an array of parts.
func oaContent(raw json.RawMessage) (string, []llm.Image, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil, nil
	}
	var parts []oaPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, fmt.Errorf("content must be a string or an array of parts")
	}
	var text string
	var images []llm.Image
	for _, p := range parts {
		switch p.Type {
		case "text":
			text = joinText(text, p.Text)
		case "image_url":
			img, err := dataURL(p.ImageURL.URL)
			if err != nil {
				return "", nil, err
			}
			images = append(images, img)
		default:
			return "", nil, fmt.Errorf("unsupported content part type %q", p.Type)
		}
	}
	return text, images, nil
}

func dataURL(u string) (llm.Image, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return llm.Image{}, fmt.Errorf("image_url must be a data: URL here (no network)")
	}
	mt, data, ok := strings.Cut(rest, ";base64,")
	if !ok {
		return llm.Image{}, fmt.Errorf("image data URL must be base64")
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return llm.Image{}, fmt.Errorf("image data URL: %v", err)
	}
	if !validImageType(mt) {
		return llm.Image{}, fmt.Errorf("image media type %q is not supported", mt)
	}
	return llm.Image{MediaType: mt, Data: b}, nil
}

func validImageType(mt string) bool {
	switch mt {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

func (openaiAPI) answer(req *Request, t Turn) any {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if t.Text != "" {
		msg["content"] = t.Text
	}
	var calls []map[string]any
	for _, c := range t.ToolCalls {
		calls = append(calls, map[string]any{
			"id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": string(c.Input)},
		})
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	finish := "stop"
	switch t.StopReason {
	case llm.StopToolUse:
		finish = "tool_calls"
	case llm.StopMaxTokens:
		finish = "length"
	case llm.StopOther:
		finish = "content_filter"
	}
	u := t.Usage
	prompt := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	return map[string]any{
		"id":      fmt.Sprintf("chatcmpl-llmtest-%d", req.N),
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
		"usage": map[string]any{
			"prompt_tokens":         prompt,
			"completion_tokens":     u.OutputTokens,
			"total_tokens":          prompt + u.OutputTokens,
			"prompt_tokens_details": map[string]any{"cached_tokens": u.CacheReadTokens, "cache_write_tokens": u.CacheWriteTokens},
		},
	}
}

func (openaiAPI) errorBody(status int, kind, msg string) any {
	code := map[int]string{401: "invalid_api_key", 429: "rate_limit_exceeded"}[status]
	return map[string]any{"error": map[string]any{"message": msg, "type": kind, "param": nil, "code": code}}
}

func joinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

func indexOf(list []string, v string) int {
	for i, x := range list {
		if x == v {
			return i
		}
	}
	return -1
}
