package llmtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/drydockhq/drydock/llm"
)

// anthropicAPI is the Messages wire format.
type anthropicAPI struct{}

func (anthropicAPI) name() string     { return "anthropic" }
func (anthropicAPI) idPrefix() string { return "toolu_" }

func (anthropicAPI) credential(h http.Header) string {
	if k := h.Get("X-Api-Key"); k != "" {
		return k
	}
	return strings.TrimPrefix(h.Get("Authorization"), "Bearer ")
}

type anRequest struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools    []anTool        `json:"tools"`
	Stream   bool            `json:"stream"`
	Thinking json.RawMessage `json:"thinking"`
}

type anTool struct {
	Type         string          `json:"type"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl json.RawMessage `json:"cache_control"`
	// The computer tool's.
	DisplayWidthPx  *int  `json:"display_width_px"`
	DisplayHeightPx *int  `json:"display_height_px"`
	EnableZoom      *bool `json:"enable_zoom"`
}

type anBlock struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Source struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	IsError      bool            `json:"is_error"`
	CacheControl json.RawMessage `json:"cache_control"`
	// thinking and redacted_thinking blocks.
	Thinking  *string `json:"thinking"`
	Signature *string `json:"signature"`
	Data      string  `json:"data"`
}

// anBlocks reads a content field: a string or an array of blocks.
func anBlocks(raw json.RawMessage) ([]anBlock, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []anBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("content must be a string or an array of blocks")
	}
	return blocks, nil
}

func (anthropicAPI) decode(body []byte, req *Request) {
	var in anRequest
	if err := json.Unmarshal(body, &in); err != nil {
		req.Problems = append(req.Problems, "body is not a Messages request: "+err.Error())
		return
	}
	bad := func(format string, args ...any) { req.Problems = append(req.Problems, fmt.Sprintf(format, args...)) }
	req.Model, req.MaxTokens = in.Model, in.MaxTokens
	if in.Model == "" {
		bad("model: Field required")
	}
	if in.MaxTokens <= 0 {
		bad("max_tokens: Field required and must be positive")
	}
	if in.Stream {
		bad("llmtest does not stream")
	}
	if len(in.System) > 0 {
		blocks, err := anBlocks(in.System)
		if err != nil {
			bad("system: %v", err)
		}
		for _, b := range blocks {
			if b.Type != "text" {
				bad("system: blocks must be text, not %q", b.Type)
			}
			if len(b.CacheControl) > 0 {
				req.CacheBreakpoints++
			}
			req.System = joinText(req.System, b.Text)
		}
	}
	req.Betas = anBetas(req.Header)
	req.Thinking = anThinkingConfig(in.Thinking, in.MaxTokens, req.Betas, bad)
	for i, t := range in.Tools {
		if t.Type != "" && t.Type != "custom" {
			if tool, ok := anNativeTool(i, t, req.Betas, bad); ok {
				if len(t.CacheControl) > 0 {
					req.CacheBreakpoints++
				}
				req.Tools = append(req.Tools, tool)
			}
			continue
		}
		if !toolName.MatchString(t.Name) {
			bad("tools.%d.name: %q does not match ^[a-zA-Z0-9_-]{1,64}$", i, t.Name)
		}
		var schema struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(t.InputSchema, &schema) != nil || schema.Type != "object" {
			bad("tools.%d.input_schema.type: Input should be 'object'", i)
		}
		if len(t.CacheControl) > 0 {
			req.CacheBreakpoints++
		}
		req.Tools = append(req.Tools, llm.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	if len(in.Messages) == 0 {
		bad("messages: at least one message is required")
	}
	var prevCalls []string // tool_use ids of the previous assistant message
	names := map[string]string{}
	for i, m := range in.Messages {
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if m.Role != want {
			bad("messages.%d.role: roles must alternate between user and assistant, starting with user (got %q)", i, m.Role)
		}
		blocks, err := anBlocks(m.Content)
		if err != nil {
			bad("messages.%d: %v", i, err)
			continue
		}
		if len(blocks) == 0 {
			bad("messages.%d: all messages must have non-empty content", i)
		}
		msg := llm.Message{Role: llm.Role(m.Role)}
		var answered []string
		seenOther := false
		for j, b := range blocks {
			if len(b.CacheControl) > 0 {
				req.CacheBreakpoints++
			}
			where := fmt.Sprintf("messages.%d.content.%d", i, j)
			switch b.Type {
			case "text":
				if strings.TrimSpace(b.Text) == "" {
					bad("%s: text content blocks must contain non-whitespace text", where)
				}
				msg.Text = joinText(msg.Text, b.Text)
				seenOther = true
			case "image":
				img, err := anImage(b)
				if err != nil {
					bad("%s: %v", where, err)
				}
				if m.Role != "user" {
					bad("%s: images are only allowed in user messages", where)
				}
				msg.Images = append(msg.Images, img)
				seenOther = true
			case "thinking", "redacted_thinking":
				th, err := anThinkingBlock(b)
				if err != nil {
					bad("%s: %v", where, err)
				}
				if m.Role != "assistant" {
					bad("%s: %s blocks are only allowed in assistant messages", where, b.Type)
				}
				if len(b.CacheControl) > 0 {
					bad("%s: cache_control cannot be set for %s blocks", where, b.Type)
				}
				msg.Reasoning = llm.ThinkingReasoning(append(msg.Reasoning.Thinking(), th))
			case "tool_use":
				if m.Role != "assistant" {
					bad("%s: tool_use blocks are only allowed in assistant messages", where)
				}
				if b.ID == "" || names[b.ID] != "" {
					bad("%s: tool_use ids must be present and unique (%q)", where, b.ID)
				}
				if checkObject(b.Input) != nil {
					bad("%s.input: Input should be an object", where)
				}
				names[b.ID] = b.Name
				msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Input: b.Input})
			case "tool_result":
				if m.Role != "user" {
					bad("%s: tool_result blocks are only allowed in user messages", where)
				}
				if seenOther {
					bad("%s: tool_result blocks must come first in the user message, before any other content", where)
				}
				if indexOf(prevCalls, b.ToolUseID) < 0 {
					bad("%s: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message", where, b.ToolUseID)
				}
				answered = append(answered, b.ToolUseID)
				r := llm.ToolResult{CallID: b.ToolUseID, Name: names[b.ToolUseID], IsError: b.IsError}
				if len(b.Content) > 0 {
					inner, err := anBlocks(b.Content)
					if err != nil {
						bad("%s.content: %v", where, err)
					}
					for k, c := range inner {
						switch c.Type {
						case "text":
							if strings.TrimSpace(c.Text) == "" {
								bad("%s.content.%d: text content blocks must contain non-whitespace text", where, k)
							}
							r.Output = joinText(r.Output, c.Text)
						case "image":
							img, err := anImage(c)
							if err != nil {
								bad("%s.content.%d: %v", where, k, err)
							}
							r.Images = append(r.Images, img)
						default:
							bad("%s.content.%d: unsupported block type %q in a tool result", where, k, c.Type)
						}
						if len(c.CacheControl) > 0 {
							req.CacheBreakpoints++
						}
					}
				}
				msg.ToolResults = append(msg.ToolResults, r)
			default:
				bad("%s: llmtest does not know block type %q", where, b.Type)
			}
		}
		if m.Role == "user" {
			var missing []string
			for _, id := range prevCalls {
				if indexOf(answered, id) < 0 {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 {
				bad("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message", i, strings.Join(missing, ", "))
			}
			prevCalls = nil
		} else {
			prevCalls = nil
			for _, c := range msg.ToolCalls {
				prevCalls = append(prevCalls, c.ID)
			}
		}
		req.Messages = append(req.Messages, msg)
	}
	anCheckLastTurn(req, bad)
	if n := len(in.Messages); n > 0 && in.Messages[n-1].Role != "user" {
		bad("the last message must be a user message (llmtest does not prefill)")
	}
	if req.CacheBreakpoints > 4 {
		bad("a maximum of 4 blocks with cache_control may be provided. Found %d", req.CacheBreakpoints)
	}
}

func anImage(b anBlock) (llm.Image, error) {
	if b.Source.Type != "base64" {
		return llm.Image{}, fmt.Errorf("image source must be base64 here (no network), got %q", b.Source.Type)
	}
	if !validImageType(b.Source.MediaType) {
		return llm.Image{}, fmt.Errorf("image media type %q is not supported", b.Source.MediaType)
	}
	data, err := base64.StdEncoding.DecodeString(b.Source.Data)
	if err != nil {
		return llm.Image{}, fmt.Errorf("image data is not base64: %v", err)
	}
	return llm.Image{MediaType: b.Source.MediaType, Data: data}, nil
}

func (anthropicAPI) answer(req *Request, t Turn) any {
	var content []any
	if req.Thinking > 0 {
		// The API thinks only when asked to.
		content = append(content, anThinkingContent(t.Thinking)...)
	}
	if t.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": t.Text})
	}
	for _, c := range t.ToolCalls {
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Input})
	}
	if content == nil {
		content = []any{}
	}
	stop := "end_turn"
	switch t.StopReason {
	case llm.StopToolUse:
		stop = "tool_use"
	case llm.StopMaxTokens:
		stop = "max_tokens"
	case llm.StopOther:
		stop = "refusal"
	}
	return map[string]any{
		"id":            fmt.Sprintf("msg_llmtest_%d", req.N),
		"type":          "message",
		"role":          "assistant",
		"model":         req.Model,
		"content":       content,
		"stop_reason":   stop,
		"stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens":                t.Usage.InputTokens,
			"output_tokens":               t.Usage.OutputTokens,
			"cache_read_input_tokens":     t.Usage.CacheReadTokens,
			"cache_creation_input_tokens": t.Usage.CacheWriteTokens,
		},
	}
}

func (anthropicAPI) errorBody(status int, kind, msg string) any {
	return map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}}
}
