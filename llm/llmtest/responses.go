package llmtest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/drydockhq/drydock/llm"
)

// responsesAPI is OpenAI's Responses wire format (POST /v1/responses). It
// plays a Turn as output items: a reasoning item first when Turn.Reasoning
// is set, then the message, then one function_call per call. Like the real
// API under store=false it keeps no conversation, only what it needs to
// check requests: which items followed a reasoning item (per server), and
// the encrypted contents it issued (in a vault shared by every server of
// the process, as OpenAI decrypts what any of its servers encrypted, so
// that a job resumed against a new server can send its reasoning back).
type responsesAPI struct{ s *Server }

// issued is what a server remembers of the items that followed its
// reasoning items.
type issued struct {
	needs map[string]needed // by id or call id of an item
}

// needed is the reasoning item that came before an item, and the model
// that wrote both: only that model is held to sending it back.
type needed struct{ reasoning, model string }

type vaultEntry struct {
	id      string // the reasoning item's id
	follows string // the id of the item that followed it, if any
	model   string // the model that thought it, the only one that reads it
}

var vault = struct {
	sync.Mutex
	m map[string]vaultEntry // by encrypted content
}{m: map[string]vaultEntry{}}

func (a responsesAPI) name() string   { return "openai-responses" }
func (responsesAPI) idPrefix() string { return "call_" }

func (responsesAPI) credential(h http.Header) string {
	return strings.TrimPrefix(h.Get("Authorization"), "Bearer ")
}

func (responsesAPI) errorBody(status int, kind, msg string) any {
	return openaiAPI{}.errorBody(status, kind, msg)
}

type rsRequest struct {
	Model           string            `json:"model"`
	Instructions    string            `json:"instructions"`
	Input           json.RawMessage   `json:"input"`
	Tools           []rsTool          `json:"tools"`
	MaxOutputTokens int               `json:"max_output_tokens"`
	Stream          bool              `json:"stream"`
	Store           *bool             `json:"store"`
	Include         []string          `json:"include"`
	ToolChoice      json.RawMessage   `json:"tool_choice"`
	Reasoning       *rsReasoningParam `json:"reasoning"`
	PreviousID      string            `json:"previous_response_id"`
}

type rsReasoningParam struct {
	Effort  string `json:"effort"`
	Summary string `json:"summary"`
}

type rsTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// rsItem is any input item; the fields used depend on Type.
type rsItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Role             string          `json:"role"`
	Phase            string          `json:"phase"`
	Content          json.RawMessage `json:"content"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        *string         `json:"arguments"`
	Output           json.RawMessage `json:"output"`
	EncryptedContent *string         `json:"encrypted_content"`
	Summary          []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

type rsPart struct {
	Type        string          `json:"type"`
	Text        string          `json:"text"`
	ImageURL    string          `json:"image_url"`
	Annotations json.RawMessage `json:"annotations"`
}

func (a responsesAPI) decode(body []byte, req *Request) {
	var in rsRequest
	if err := json.Unmarshal(body, &in); err != nil {
		req.Problems = append(req.Problems, "body is not a responses request: "+err.Error())
		return
	}
	bad := func(format string, args ...any) { req.Problems = append(req.Problems, fmt.Sprintf(format, args...)) }
	req.Model = in.Model
	req.System = in.Instructions
	req.MaxTokens = in.MaxOutputTokens
	req.ToolChoice = string(in.ToolChoice)
	req.Store = in.Store
	req.Include = in.Include
	if in.Reasoning != nil {
		req.ReasoningEffort = in.Reasoning.Effort
		req.ReasoningSummary = in.Reasoning.Summary
	}
	if in.Model == "" {
		bad("model is required")
	}
	if in.Stream {
		bad("llmtest does not stream")
	}
	if in.PreviousID != "" {
		bad("previous_response_id %q: llmtest stores no responses (send the conversation with store=false)", in.PreviousID)
	}
	for i, t := range in.Tools {
		if t.Type != "function" {
			bad("tools[%d].type is %q, want function", i, t.Type)
		}
		if !toolName.MatchString(t.Name) {
			bad("tools[%d].name %q is invalid", i, t.Name)
		}
		if len(t.Parameters) > 0 && checkObject(t.Parameters) != nil {
			bad("tools[%d].parameters must be a JSON schema object", i)
		}
		if (t.Strict == nil || *t.Strict) && !strictSchema(t.Parameters) {
			// The API's default is strict, which wants every property
			// required and additionalProperties false.
			bad("Invalid schema for function '%s': In context=(), 'required' is required to be supplied and to be an array including every key in properties, and 'additionalProperties' must be false (strict mode is the default: set strict to false)", t.Name)
		}
		req.Tools = append(req.Tools, llm.Tool{Name: t.Name, Description: t.Description, InputSchema: t.Parameters})
	}

	var items []rsItem
	var s string
	switch {
	case json.Unmarshal(in.Input, &s) == nil:
		items = []rsItem{{Type: "message", Role: "user", Content: in.Input}}
	case json.Unmarshal(in.Input, &items) != nil:
		bad("input must be a string or an array of items")
		return
	}
	if len(items) == 0 {
		bad("input must not be empty")
	}
	a.decodeItems(items, in.Store != nil && !*in.Store, req, bad)
}

func (a responsesAPI) decodeItems(items []rsItem, noStore bool, req *Request, bad func(string, ...any)) {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	iss := a.s.issued

	var cur *llm.Message
	flush := func() {
		if cur != nil {
			req.Messages = append(req.Messages, *cur)
			cur = nil
		}
	}
	names := map[string]string{}   // call id -> tool name
	answered := map[string]bool{}  // call ids with an output
	seen := map[string]bool{}      // reasoning ids sent so far
	lastGroup := map[string]bool{} // call ids of the latest assistant turn
	turn := func(role llm.Role) *llm.Message {
		if cur != nil && cur.Role != role {
			flush()
		}
		if cur == nil {
			cur = &llm.Message{Role: role}
			if role == llm.RoleAssistant {
				clear(lastGroup)
			}
		}
		return cur
	}
	missing := map[string]string{} // call id -> reasoning id not sent before it
	for i, it := range items {
		if it.Type == "" && it.Role != "" {
			it.Type = "message"
		}
		label := it.Type + " " + firstNonEmpty(it.ID, it.CallID, it.Role) + " " + it.Phase
		req.InputItems = append(req.InputItems, strings.TrimSpace(label))
		switch it.Type {
		case "reasoning":
			turn(llm.RoleAssistant)
			req.Reasoning = append(req.Reasoning, it.ID)
			var e vaultEntry
			switch {
			case it.EncryptedContent == nil || *it.EncryptedContent == "":
				if noStore {
					bad("Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", it.ID)
				}
			default:
				vault.Lock()
				v, known := vault.m[*it.EncryptedContent]
				vault.Unlock()
				switch {
				case !known || v.id != it.ID:
					bad("The encrypted content for item %s could not be verified.", it.ID)
				case v.model != req.Model:
					bad("The encrypted content for item %s was produced by model %s and cannot be read by %s.", it.ID, v.model, req.Model)
				}
				e = v
			}
			next := rsItem{}
			if i+1 < len(items) {
				next = items[i+1]
			}
			// A reasoning item is sent with the output item that followed
			// it: a function call or an assistant message.
			alone := next.Type != "function_call" && next.Role != "assistant"
			if alone || e.follows != "" && next.ID != e.follows {
				bad("Item '%s' of type 'reasoning' was provided without its required following item.", it.ID)
			}
			seen[it.ID] = true
		case "message":
			text, images, err := rsContent(it.Content)
			if err != nil {
				bad("input[%d]: %v", i, err)
			}
			switch it.Role {
			case "system", "developer":
				req.System = joinText(req.System, text)
			case "user":
				u := turn(llm.RoleUser)
				u.Text = joinText(u.Text, text)
				u.Images = append(u.Images, images...)
			case "assistant":
				m := turn(llm.RoleAssistant)
				m.Text = joinText(m.Text, text)
				a.needReasoning(iss, it.ID, "message", req.Model, seen, bad)
			default:
				bad("input[%d]: unknown role %q", i, it.Role)
			}
		case "function_call":
			m := turn(llm.RoleAssistant)
			args := ""
			if it.Arguments != nil {
				args = *it.Arguments
			}
			if it.CallID == "" || it.Name == "" || it.Arguments == nil {
				bad("input[%d]: function_call needs call_id, name and arguments", i)
			}
			if checkObject(json.RawMessage(args)) != nil {
				bad("input[%d].arguments must be a JSON object in a string", i)
			}
			names[it.CallID] = it.Name
			lastGroup[it.CallID] = true
			m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: it.CallID, Name: it.Name, Input: json.RawMessage(args)})
			a.needReasoning(iss, it.ID, "function_call", req.Model, seen, bad)
			if r := iss.needs[it.CallID]; r.model == req.Model && !seen[r.reasoning] && noStore {
				missing[it.CallID] = r.reasoning
			}
		case "function_call_output":
			if _, ok := names[it.CallID]; !ok {
				bad("input[%d]: No tool call found for function call output with call_id %s.", i, it.CallID)
			}
			answered[it.CallID] = true
			text, images, err := rsOutput(it.Output)
			if err != nil {
				bad("input[%d].output: %v", i, err)
			}
			u := turn(llm.RoleUser)
			if u.Text != "" || len(u.Images) > 0 {
				bad("input[%d]: a function_call_output follows a user message in the same turn", i)
			}
			u.ToolResults = append(u.ToolResults, llm.ToolResult{CallID: it.CallID, Name: names[it.CallID], Output: text, IsError: strings.HasPrefix(text, "Error: "), Images: images})
		default:
			bad("input[%d]: item type %q is not supported by llmtest", i, it.Type)
		}
	}
	flush()
	for id := range names {
		if !answered[id] {
			bad("No tool output found for function call %s.", id)
		}
	}
	// The previous output's reasoning must come back with it: only the
	// latest assistant turn is held to it, as a real model is the one
	// that loses most from forgetting what it just thought.
	for id := range lastGroup {
		if r := missing[id]; r != "" {
			bad("function call %s came after reasoning item %s, which was not passed back (store is false, so the reasoning items of the previous response must be passed back in order)", id, r)
		}
	}
}

// needReasoning checks that an item the server issued after a reasoning
// item, sent back with its id, comes after that reasoning item.
func (responsesAPI) needReasoning(iss issued, id, typ, model string, seen map[string]bool, bad func(string, ...any)) {
	if id == "" {
		return
	}
	if r, ok := iss.needs[id]; ok && r.model == model && !seen[r.reasoning] {
		bad("Item '%s' of type '%s' was provided without its required 'reasoning' item: '%s'.", id, typ, r.reasoning)
	}
}

// strictSchema reports whether a schema is acceptable in strict mode: an
// object whose properties are all required, with additionalProperties
// false (checked at the top level).
func strictSchema(raw json.RawMessage) bool {
	var s struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	if json.Unmarshal(raw, &s) != nil || s.AdditionalProperties == nil || *s.AdditionalProperties {
		return false
	}
	for k := range s.Properties {
		if indexOf(s.Required, k) < 0 {
			return false
		}
	}
	return true
}

// rsContent reads a message's content: a string or input/output parts.
func rsContent(raw json.RawMessage) (string, []llm.Image, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil, nil
	}
	var parts []rsPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, fmt.Errorf("content must be a string or an array of parts")
	}
	return rsParts(parts)
}

func rsParts(parts []rsPart) (string, []llm.Image, error) {
	var text string
	var images []llm.Image
	for _, p := range parts {
		switch p.Type {
		case "output_text":
			if len(p.Annotations) == 0 || p.Annotations[0] != '[' {
				return "", nil, fmt.Errorf("output_text.annotations is required (an array)")
			}
			text = joinText(text, p.Text)
		case "input_text":
			text = joinText(text, p.Text)
		case "input_image":
			img, err := dataURL(p.ImageURL)
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

// rsOutput reads a function_call_output's output: a string, or input_text
// and input_image parts.
func rsOutput(raw json.RawMessage) (string, []llm.Image, error) {
	if len(raw) == 0 {
		return "", nil, fmt.Errorf("output is required")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil, nil
	}
	var parts []rsPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, fmt.Errorf("output must be a string or an array of input_text, input_image or input_file")
	}
	return rsParts(parts)
}

func (a responsesAPI) answer(req *Request, t Turn) any {
	withEncrypted := indexOf(req.Include, "reasoning.encrypted_content") >= 0
	var output []any
	var ids []string
	rsID := ""
	if t.Reasoning != "" {
		rsID = fmt.Sprintf("rs_llmtest_%d", req.N)
		item := map[string]any{"type": "reasoning", "id": rsID, "summary": []any{}}
		enc := ""
		if withEncrypted {
			nonce := make([]byte, 12)
			rand.Read(nonce)
			enc = base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "llmtest reasoning %x %s: %s", nonce, rsID, t.Reasoning))
			item["encrypted_content"] = enc
		}
		if req.ReasoningSummary != "" {
			item["summary"] = []any{map[string]any{"type": "summary_text", "text": t.Reasoning}}
		}
		output = append(output, item)
		defer func() {
			if enc == "" {
				return
			}
			e := vaultEntry{id: rsID, model: req.Model}
			if len(ids) > 0 {
				e.follows = ids[0]
			}
			vault.Lock()
			vault.m[enc] = e
			vault.Unlock()
		}()
	}
	if t.Text != "" {
		id := fmt.Sprintf("msg_llmtest_%d", req.N)
		ids = append(ids, id)
		// The newer models mark text before calls as commentary and
		// want the phase back with the message.
		phase := "final_answer"
		if len(t.ToolCalls) > 0 {
			phase = "commentary"
		}
		output = append(output, map[string]any{
			"type": "message", "id": id, "role": "assistant", "status": "completed", "phase": phase,
			"content": []any{map[string]any{"type": "output_text", "text": t.Text, "annotations": []any{}}},
		})
	}
	for i, c := range t.ToolCalls {
		id := fmt.Sprintf("fc_llmtest_%d_%d", req.N, i+1)
		ids = append(ids, id, c.ID)
		output = append(output, map[string]any{
			"type": "function_call", "id": id, "call_id": c.ID, "name": c.Name,
			"arguments": string(c.Input), "status": "completed",
		})
	}
	if rsID != "" && (withEncrypted || req.Store == nil || *req.Store) {
		// Only reasoning that can come back is asked for: under
		// store=false without its encrypted content there is no way to.
		a.s.mu.Lock()
		for _, id := range ids {
			a.s.issued.needs[id] = needed{reasoning: rsID, model: req.Model}
		}
		a.s.mu.Unlock()
	}
	status, incomplete := "completed", any(nil)
	switch t.StopReason {
	case llm.StopMaxTokens:
		status, incomplete = "incomplete", map[string]any{"reason": "max_output_tokens"}
	case llm.StopOther:
		status, incomplete = "incomplete", map[string]any{"reason": "content_filter"}
	}
	// llm.Usage counts reasoning inside OutputTokens, as the API does.
	u := t.Usage
	prompt := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	out := u.OutputTokens
	return map[string]any{
		"id":                 fmt.Sprintf("resp_llmtest_%d", req.N),
		"object":             "response",
		"created_at":         time.Now().Unix(),
		"status":             status,
		"incomplete_details": incomplete,
		"error":              nil,
		"model":              req.Model,
		"output":             output,
		"store":              req.Store == nil || *req.Store,
		"usage": map[string]any{
			"input_tokens":          prompt,
			"input_tokens_details":  map[string]any{"cached_tokens": u.CacheReadTokens, "cache_write_tokens": u.CacheWriteTokens},
			"output_tokens":         out,
			"output_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
			"total_tokens":          prompt + out,
		},
	}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// responsesBlocks splits a Responses request into the blocks of its prompt
// for the prompt cache: the instructions, the tools, then the input items.
func responsesBlocks(body []byte) ([]cacheBlock, bool) {
	var in struct {
		Instructions json.RawMessage   `json:"instructions"`
		Tools        []json.RawMessage `json:"tools"`
		Input        []json.RawMessage `json:"input"`
	}
	if json.Unmarshal(body, &in) != nil {
		return nil, false
	}
	raws := in.Tools
	if len(in.Instructions) > 0 {
		raws = append([]json.RawMessage{in.Instructions}, raws...)
	}
	var out []cacheBlock
	for _, raw := range append(raws, in.Input...) {
		b, ok := canonical("", raw)
		if !ok {
			return nil, false
		}
		out = append(out, b)
	}
	return out, true
}
