package anthropic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/drydockhq/drydock/llm"
)

// Vendor names Anthropic in error messages.
var Vendor = llm.Vendor{Name: "Anthropic", KeyEnv: "ANTHROPIC_API_KEY", BaseURLEnv: "ANTHROPIC_BASE_URL"}

// DefaultMaxTokens caps a reply when the request sets no limit; the
// Messages API requires one.
const DefaultMaxTokens = 8192

// Config configures a Provider. Zero values take the defaults.
type Config struct {
	// APIKey and BaseURL override ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL.
	APIKey  string
	BaseURL string
	// MaxRetries is how many times a request is retried on 408, 409, 429,
	// 5xx (529 overloaded included), timeouts and dropped connections
	// (default 5). The SDK backs off exponentially from 0.5s up to 8s,
	// honouring Retry-After.
	MaxRetries int
	// RequestTimeout bounds one attempt (default 10m).
	RequestTimeout time.Duration
}

// Provider talks to the Messages API.
type Provider struct {
	client sdk.Client
}

var _ llm.Provider = (*Provider)(nil)

// New returns a provider, or an EINVALID error saying what to set when no
// key is configured.
func New(cfg Config) (*Provider, error) {
	opts := []option.RequestOption{option.WithoutEnvironmentDefaults()}
	switch {
	case cfg.APIKey != "":
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	case os.Getenv("ANTHROPIC_API_KEY") != "":
		opts = append(opts, option.WithAPIKey(os.Getenv("ANTHROPIC_API_KEY")))
	case os.Getenv("ANTHROPIC_AUTH_TOKEN") != "":
		opts = append(opts, option.WithAuthToken(os.Getenv("ANTHROPIC_AUTH_TOKEN")))
	default:
		return nil, Vendor.NoCredentials()
	}
	if base := firstNonEmpty(cfg.BaseURL, os.Getenv("ANTHROPIC_BASE_URL")); base != "" {
		opts = append(opts, option.WithBaseURL(base))
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 5
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 10 * time.Minute
	}
	opts = append(opts,
		option.WithHTTPClient(&http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}),
		option.WithMaxRetries(max(cfg.MaxRetries, 0)),
		// An explicit timeout also keeps the SDK from refusing non-streaming
		// requests with a large max_tokens; each attempt gets it afresh and
		// an attempt that runs out is retried.
		option.WithRequestTimeout(cfg.RequestTimeout),
	)
	return &Provider{client: sdk.NewClient(opts...)}, nil
}

// Name implements llm.Provider.
func (p *Provider) Name() string { return "anthropic" }

// Complete implements llm.Provider.
func (p *Provider) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	params, err := buildParams(req)
	if err != nil {
		return nil, err
	}
	msg, err := p.client.Messages.New(ctx, params)
	if err != nil {
		return nil, classify(ctx, err)
	}
	return convertResponse(msg), nil
}

func classify(ctx context.Context, err error) error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		status := apiErr.StatusCode
		if status == 0 && apiErr.Response != nil {
			status = apiErr.Response.StatusCode
		}
		return Vendor.APIError(status, apiErr.RawJSON(), err)
	}
	return Vendor.TransportError(ctx, err)
}

func buildParams(req *llm.Request) (sdk.MessageNewParams, error) {
	params := sdk.MessageNewParams{
		Model:     sdk.Model(req.Model),
		MaxTokens: int64(req.MaxTokens),
	}
	if params.MaxTokens <= 0 {
		params.MaxTokens = DefaultMaxTokens
	}
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System, CacheControl: sdk.NewCacheControlEphemeralParam()}}
	}
	for i, m := range req.Messages {
		var blocks []sdk.ContentBlockParamUnion
		switch m.Role {
		case llm.RoleAssistant:
			blocks = assistantBlocks(m)
			if len(blocks) > 0 {
				params.Messages = append(params.Messages, sdk.NewAssistantMessage(blocks...))
			}
		case llm.RoleUser:
			blocks = userBlocks(m)
			params.Messages = append(params.Messages, sdk.NewUserMessage(blocks...))
		default:
			return params, fmt.Errorf("anthropic: message %d has unknown role %q", i, m.Role)
		}
	}
	params.Messages = mergeRoles(params.Messages)
	markCache(params.Messages)
	for _, t := range req.Tools {
		schema, err := inputSchema(t.InputSchema)
		if err != nil {
			return params, fmt.Errorf("anthropic: schema of tool %s: %w", t.Name, err)
		}
		tool := sdk.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tool.Description = sdk.String(t.Description)
		}
		params.Tools = append(params.Tools, sdk.ToolUnionParam{OfTool: &tool})
	}
	// req.NoToolCalls sets no tool_choice: a tool_choice other than the
	// steps' (auto) invalidates the cached message blocks, which are what
	// such a request is built to reuse. The caller handles a reply that
	// calls a tool anyway.
	return params, nil
}

// mergeRoles joins consecutive messages of the same role, which the API
// refuses; they arise when an assistant turn had nothing to send.
func mergeRoles(msgs []sdk.MessageParam) []sdk.MessageParam {
	var out []sdk.MessageParam
	for _, m := range msgs {
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			out[n-1].Content = append(out[n-1].Content, m.Content...)
			continue
		}
		out = append(out, m)
	}
	return out
}

// markCache puts a cache breakpoint on the last block of the last two user
// messages: the older one is where this request reads the cache the
// previous request wrote, the newer one where it writes for the next.
// With the system prompt's, that makes three of the four allowed.
func markCache(msgs []sdk.MessageParam) {
	marked := 0
	for i := len(msgs) - 1; i >= 0 && marked < 2; i-- {
		if msgs[i].Role != sdk.MessageParamRoleUser || len(msgs[i].Content) == 0 {
			continue
		}
		if cc := msgs[i].Content[len(msgs[i].Content)-1].GetCacheControl(); cc != nil {
			*cc = sdk.NewCacheControlEphemeralParam()
			marked++
		}
	}
}

func assistantBlocks(m llm.Message) []sdk.ContentBlockParamUnion {
	var blocks []sdk.ContentBlockParamUnion
	if strings.TrimSpace(m.Text) != "" {
		blocks = append(blocks, sdk.NewTextBlock(m.Text))
	}
	for _, c := range m.ToolCalls {
		blocks = append(blocks, sdk.NewToolUseBlock(c.ID, llm.ObjectInput(c.Input), c.Name))
	}
	return blocks
}

func userBlocks(m llm.Message) []sdk.ContentBlockParamUnion {
	var blocks []sdk.ContentBlockParamUnion
	for _, r := range m.ToolResults {
		res := sdk.ToolResultBlockParam{ToolUseID: r.CallID}
		if r.IsError {
			res.IsError = sdk.Bool(true)
		}
		if r.Output != "" || len(r.Images) == 0 {
			text := r.Output
			if text == "" {
				text = "(no output)"
			}
			res.Content = append(res.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: text}})
		}
		for _, img := range r.Images {
			res.Content = append(res.Content, sdk.ToolResultBlockParamContentUnion{OfImage: imageBlock(img)})
		}
		blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: &res})
	}
	if strings.TrimSpace(m.Text) != "" {
		blocks = append(blocks, sdk.NewTextBlock(m.Text))
	}
	for _, img := range m.Images {
		blocks = append(blocks, sdk.ContentBlockParamUnion{OfImage: imageBlock(img)})
	}
	if len(blocks) == 0 {
		// The API refuses empty messages and empty text blocks.
		blocks = append(blocks, sdk.NewTextBlock("(empty)"))
	}
	return blocks
}

func imageBlock(img llm.Image) *sdk.ImageBlockParam {
	return &sdk.ImageBlockParam{Source: sdk.ImageBlockParamSourceUnion{OfBase64: &sdk.Base64ImageSourceParam{
		Data:      base64.StdEncoding.EncodeToString(img.Data),
		MediaType: sdk.Base64ImageSourceMediaType(img.MediaType),
	}}}
}

// inputSchema splits a JSON Schema object into the SDK's fields.
func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return sdk.ToolInputSchemaParam{}, err
	}
	s := sdk.ToolInputSchemaParam{Properties: m["properties"]}
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				s.Required = append(s.Required, name)
			}
		}
	}
	for k, v := range m {
		switch k {
		case "type", "properties", "required":
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	return s, nil
}

func convertResponse(msg *sdk.Message) *llm.Response {
	out := &llm.Response{Model: string(msg.Model)}
	var text []string
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "tool_use":
			input := b.Input
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Input: input})
		}
	}
	out.Text = strings.Join(text, "\n\n")
	switch msg.StopReason {
	case sdk.StopReasonToolUse:
		out.StopReason = llm.StopToolUse
	case sdk.StopReasonEndTurn, sdk.StopReasonStopSequence:
		out.StopReason = llm.StopEndTurn
	case sdk.StopReasonMaxTokens:
		out.StopReason = llm.StopMaxTokens
	default:
		out.StopReason = llm.StopOther
	}
	out.Usage = llm.Usage{
		InputTokens:      msg.Usage.InputTokens,
		OutputTokens:     msg.Usage.OutputTokens,
		CacheReadTokens:  msg.Usage.CacheReadInputTokens,
		CacheWriteTokens: msg.Usage.CacheCreationInputTokens,
	}
	return out
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
