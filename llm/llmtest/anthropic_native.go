package llmtest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/drydockhq/drydock/llm"
)

// Anthropic's built-in tools as the Messages API checks them: the name
// each type must have, the kind it is, and the beta flag it needs.
var anNative = map[string]struct {
	name, kind, beta string
}{
	"bash_20250124":        {"bash", llm.NativeBash, ""},
	"text_editor_20250124": {"str_replace_editor", llm.NativeTextEditor, ""},
	"text_editor_20250429": {"str_replace_based_edit_tool", llm.NativeTextEditor, ""},
	"text_editor_20250728": {"str_replace_based_edit_tool", llm.NativeTextEditor, ""},
	"computer_20250124":    {"computer", llm.NativeComputer, "computer-use-2025-01-24"},
	"computer_20251124":    {"computer", llm.NativeComputer, "computer-use-2025-11-24"},
}

// Interleaved is the beta flag that lets a model think between tool calls
// (and a budget exceed max_tokens).
const Interleaved = "interleaved-thinking-2025-05-14"

// anBetas reads the anthropic-beta header: flags separated by commas, in
// one header or several.
func anBetas(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Anthropic-Beta") {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
	}
	return out
}

// anNativeTool checks a built-in tool the way the API does and records it
// with its kind, display size and type.
func anNativeTool(i int, t anTool, betas []string, bad func(string, ...any)) (llm.Tool, bool) {
	n, ok := anNative[t.Type]
	if !ok {
		bad("tools.%d: Input tag '%s' found using 'type' does not match any of the expected tags (llmtest knows custom, %s)", i, t.Type, strings.Join(anNativeTypes(), ", "))
		return llm.Tool{}, false
	}
	ok = true
	if t.Name != n.name {
		bad("tools.%d.name: %s must be named %q, not %q", i, t.Type, n.name, t.Name)
		ok = false
	}
	if n.beta != "" && !slices.Contains(betas, n.beta) {
		bad("tools.%d: %s needs the beta flag %q in the anthropic-beta header", i, t.Type, n.beta)
		ok = false
	}
	if len(t.InputSchema) > 0 || t.Description != "" {
		bad("tools.%d: %s takes no input_schema or description: the model knows the tool", i, t.Type)
		ok = false
	}
	tool := llm.Tool{Name: t.Name, Native: &llm.NativeTool{Kind: n.kind, Type: t.Type}}
	if t.EnableZoom != nil {
		if t.Type != "computer_20251124" {
			bad("tools.%d.enable_zoom: Extra inputs are not permitted for %s", i, t.Type)
			ok = false
		}
		tool.Native.Zoom = *t.EnableZoom
	}
	if n.kind == llm.NativeComputer {
		if t.DisplayWidthPx == nil || t.DisplayHeightPx == nil {
			bad("tools.%d: %s: display_width_px and display_height_px: Field required", i, t.Type)
			ok = false
		} else if *t.DisplayWidthPx <= 0 || *t.DisplayHeightPx <= 0 {
			bad("tools.%d: %s: the display size must be positive, not %dx%d", i, t.Type, *t.DisplayWidthPx, *t.DisplayHeightPx)
			ok = false
		} else {
			tool.Native.DisplayWidth, tool.Native.DisplayHeight = *t.DisplayWidthPx, *t.DisplayHeightPx
		}
	}
	return tool, ok
}

func anNativeTypes() []string {
	var out []string
	for k := range anNative {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// anThinkingConfig reads the thinking option and returns its budget (0
// when off), checking it as the API does.
func anThinkingConfig(raw json.RawMessage, maxTokens int, betas []string, bad func(string, ...any)) int {
	if len(raw) == 0 || string(raw) == "null" {
		return 0
	}
	var th struct {
		Type         string `json:"type"`
		BudgetTokens *int   `json:"budget_tokens"`
	}
	if err := json.Unmarshal(raw, &th); err != nil {
		bad("thinking: %v", err)
		return 0
	}
	switch th.Type {
	case "disabled":
		return 0
	case "enabled":
	default:
		bad("thinking.type: llmtest knows enabled and disabled, not %q", th.Type)
		return 0
	}
	if th.BudgetTokens == nil {
		bad("thinking.enabled.budget_tokens: Field required")
		return 0
	}
	b := *th.BudgetTokens
	if b < 1024 {
		bad("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
	}
	if b >= maxTokens && !slices.Contains(betas, Interleaved) {
		bad("`max_tokens` must be greater than `thinking.budget_tokens`")
	}
	return max(b, 1)
}

// Thinking blocks carry a signature, and redacted ones their data, that
// the server makes with a key of its own: a client cannot forge or alter
// them unnoticed, as with the real API.
var thinkingKey = func() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}()

func thinkingMAC(kind, text string) string {
	m := hmac.New(sha256.New, thinkingKey)
	m.Write([]byte(kind + "\x00" + text))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// SignThinking returns b as the server sends it: with the signature of
// its text, or, for a redacted block (Redacted holds the reasoning), with
// the reasoning sealed in its data.
func SignThinking(b llm.Thinking) llm.Thinking {
	if b.Redacted != "" {
		return llm.Thinking{Redacted: "llmtest:" + base64.StdEncoding.EncodeToString([]byte(b.Redacted)) + "." + thinkingMAC("redacted", b.Redacted)}
	}
	return llm.Thinking{Text: b.Text, Signature: thinkingMAC("thinking", b.Text)}
}

func anThinkingContent(blocks []llm.Thinking) []any {
	var out []any
	for _, b := range blocks {
		s := SignThinking(b)
		if s.Redacted != "" {
			out = append(out, map[string]any{"type": "redacted_thinking", "data": s.Redacted})
		} else {
			out = append(out, map[string]any{"type": "thinking", "thinking": s.Text, "signature": s.Signature})
		}
	}
	return out
}

// anThinkingBlock reads a thinking or redacted_thinking block sent back,
// checking that it is the server's own, unaltered.
func anThinkingBlock(b anBlock) (llm.Thinking, error) {
	if b.Type == "redacted_thinking" {
		payload, mac, ok := strings.Cut(strings.TrimPrefix(b.Data, "llmtest:"), ".")
		text, err := base64.StdEncoding.DecodeString(payload)
		if !ok || err != nil || !strings.HasPrefix(b.Data, "llmtest:") || !hmac.Equal([]byte(mac), []byte(thinkingMAC("redacted", string(text)))) {
			return llm.Thinking{Redacted: b.Data}, fmt.Errorf("Invalid `data` in `redacted_thinking` block")
		}
		return llm.Thinking{Redacted: b.Data}, nil
	}
	if b.Thinking == nil || b.Signature == nil {
		return llm.Thinking{}, fmt.Errorf("thinking blocks need thinking and signature: Field required")
	}
	th := llm.Thinking{Text: *b.Thinking, Signature: *b.Signature}
	if !hmac.Equal([]byte(th.Signature), []byte(thinkingMAC("thinking", th.Text))) {
		return th, fmt.Errorf("Invalid `signature` in `thinking` block")
	}
	return th, nil
}

// anCheckLastTurn applies the rule of thinking in a tool-use loop: with
// thinking on, the assistant message whose tool calls the last user
// message answers must start with its thinking, sent back.
func anCheckLastTurn(req *Request, bad func(string, ...any)) {
	n := len(req.Messages)
	if req.Thinking == 0 || n < 2 || len(req.Messages[n-1].ToolResults) == 0 {
		return
	}
	a := req.Messages[n-2]
	if a.Role != llm.RoleAssistant || len(a.Reasoning.Thinking()) > 0 {
		return
	}
	found := "text"
	if a.Text == "" {
		found = "tool_use"
	}
	bad("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). To avoid this requirement, disable `thinking`.", n-2, found)
}
