package anthropic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
)

// Vendor names Anthropic in error messages.
var Vendor = llm.Vendor{Name: "Anthropic", KeyEnv: "ANTHROPIC_API_KEY", BaseURLEnv: "ANTHROPIC_BASE_URL"}

// DefaultMaxTokens caps a reply when the request sets no limit; the
// Messages API requires one.
const DefaultMaxTokens = 8192

// Config configures a Provider. Zero values take the defaults.
type Config struct {
	// APIKey (sent as x-api-key) or else AuthToken (a bearer token) is the
	// credential; BaseURL, when set, replaces Anthropic's API. The package
	// never reads the environment: the composition root (cmd/drydock)
	// takes them from ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN and
	// ANTHROPIC_BASE_URL.
	APIKey    string
	AuthToken string
	BaseURL   string
	// MaxRetries is how many times a request is retried on 408, 409, 429,
	// 5xx (529 overloaded included), timeouts and dropped connections
	// (default 5). The SDK backs off exponentially from 0.5s up to 8s,
	// honouring Retry-After.
	MaxRetries int
	// RequestTimeout bounds one attempt (default 10m).
	RequestTimeout time.Duration
	// ThinkingBudget is the extended-thinking budget in tokens for models
	// that can think: 0 takes the model's default (llm.Model), a negative
	// value turns thinking off, a positive one (at least 1024) sets it.
	ThinkingBudget int
}

// MinThinkingBudget is the smallest budget the API accepts.
const MinThinkingBudget = 1024

// Provider talks to the Messages API (its beta surface, which takes the
// built-in tools and thinking options).
type Provider struct {
	client   sdk.Client
	thinking int
}

var _ llm.Provider = (*Provider)(nil)

// New returns a provider, or an EINVALID error saying what to set when no
// key is configured.
func New(cfg Config) (*Provider, error) {
	if cfg.ThinkingBudget > 0 && cfg.ThinkingBudget < MinThinkingBudget {
		return nil, drydock.Errorf(drydock.EINVALID, "the thinking budget must be at least %d tokens (or negative to turn thinking off), not %d", MinThinkingBudget, cfg.ThinkingBudget)
	}
	opts := []option.RequestOption{option.WithoutEnvironmentDefaults()}
	switch {
	case cfg.APIKey != "":
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	case cfg.AuthToken != "":
		opts = append(opts, option.WithAuthToken(cfg.AuthToken))
	default:
		return nil, Vendor.NoCredentials()
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
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
	return &Provider{client: sdk.NewClient(opts...), thinking: cfg.ThinkingBudget}, nil
}

// Name implements llm.Provider.
func (p *Provider) Name() string { return llm.ProviderAnthropic }

// Complete implements llm.Provider.
func (p *Provider) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	params, err := buildParams(req, p.thinking)
	if err != nil {
		return nil, err
	}
	msg, err := p.client.Beta.Messages.New(ctx, params)
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

func buildParams(req *llm.Request, thinking int) (sdk.BetaMessageNewParams, error) {
	params := sdk.BetaMessageNewParams{
		Model:     sdk.Model(req.Model),
		MaxTokens: int64(req.MaxTokens),
	}
	if params.MaxTokens <= 0 {
		params.MaxTokens = DefaultMaxTokens
	}
	if req.System != "" {
		params.System = []sdk.BetaTextBlockParam{{Text: req.System, CacheControl: sdk.NewBetaCacheControlEphemeralParam()}}
	}
	model, _ := llm.LookupModel(req.Model)
	budget := thinkingBudget(model, thinking)
	if !lastTurnThought(req.Messages) {
		budget = 0
	}
	for i, m := range req.Messages {
		switch m.Role {
		case llm.RoleAssistant:
			if budget == 0 {
				// Without thinking the API needs none back, and a model that
				// cannot think (a follow-up on another model) may refuse it.
				m.Reasoning = nil
			}
			if blocks := assistantBlocks(m); len(blocks) > 0 {
				params.Messages = append(params.Messages, sdk.BetaMessageParam{Role: sdk.BetaMessageParamRoleAssistant, Content: blocks})
			}
		case llm.RoleUser:
			params.Messages = append(params.Messages, sdk.NewBetaUserMessage(userBlocks(m)...))
		default:
			return params, fmt.Errorf("anthropic: message %d has unknown role %q", i, m.Role)
		}
	}
	params.Messages = mergeRoles(params.Messages)
	markCache(params.Messages)
	betas := map[sdk.AnthropicBeta]bool{}
	for _, t := range req.Tools {
		tool, beta, err := toolParam(t, model)
		if err != nil {
			return params, err
		}
		params.Tools = append(params.Tools, tool)
		if beta != "" {
			betas[beta] = true
		}
	}
	if budget > 0 {
		// The budget comes on top of the reply's cap, so that thinking
		// does not eat the room the caller asked for, within what the
		// model takes.
		interleaved := model.Interleaved && len(req.Tools) > 0
		params.MaxTokens += int64(budget)
		if model.MaxOutput > 0 && params.MaxTokens > int64(model.MaxOutput) {
			params.MaxTokens = int64(model.MaxOutput)
			if !interleaved {
				// Without interleaving the budget must stay under max_tokens.
				budget = min(budget, model.MaxOutput/2)
			}
		}
		params.Thinking = sdk.BetaThinkingConfigParamUnion{OfEnabled: &sdk.BetaThinkingConfigEnabledParam{BudgetTokens: int64(max(budget, MinThinkingBudget))}}
		if interleaved {
			betas[sdk.AnthropicBetaInterleavedThinking2025_05_14] = true
		}
	}
	for b := range betas {
		params.Betas = append(params.Betas, b)
	}
	slices.Sort(params.Betas)
	// req.NoToolCalls sets no tool_choice: a tool_choice other than the
	// steps' (auto) invalidates the cached message blocks, which are what
	// such a request is built to reuse, and with thinking on the API
	// refuses any that forces a choice. The caller handles a reply that
	// calls a tool anyway.
	return params, nil
}

// mergeRoles joins consecutive messages of the same role, which the API
// refuses; they arise when an assistant turn had nothing to send.
func mergeRoles(msgs []sdk.BetaMessageParam) []sdk.BetaMessageParam {
	var out []sdk.BetaMessageParam
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
func markCache(msgs []sdk.BetaMessageParam) {
	marked := 0
	for i := len(msgs) - 1; i >= 0 && marked < 2; i-- {
		if msgs[i].Role != sdk.BetaMessageParamRoleUser || len(msgs[i].Content) == 0 {
			continue
		}
		if cc := msgs[i].Content[len(msgs[i].Content)-1].GetCacheControl(); cc != nil {
			*cc = sdk.NewBetaCacheControlEphemeralParam()
			marked++
		}
	}
}

func assistantBlocks(m llm.Message) []sdk.BetaContentBlockParamUnion {
	var blocks []sdk.BetaContentBlockParamUnion
	for _, t := range m.Reasoning.Thinking() {
		if t.Redacted != "" {
			blocks = append(blocks, sdk.NewBetaRedactedThinkingBlock(t.Redacted))
		} else {
			blocks = append(blocks, sdk.NewBetaThinkingBlock(t.Signature, t.Text))
		}
	}
	if strings.TrimSpace(m.Text) != "" {
		blocks = append(blocks, sdk.NewBetaTextBlock(m.Text))
	}
	for _, c := range m.ToolCalls {
		blocks = append(blocks, sdk.NewBetaToolUseBlock(c.ID, llm.ObjectInput(c.Input), c.Name))
	}
	return blocks
}

func userBlocks(m llm.Message) []sdk.BetaContentBlockParamUnion {
	var blocks []sdk.BetaContentBlockParamUnion
	for _, r := range m.ToolResults {
		res := sdk.BetaToolResultBlockParam{ToolUseID: r.CallID}
		if r.IsError {
			res.IsError = sdk.Bool(true)
		}
		if r.Output != "" || len(r.Images) == 0 {
			text := r.Output
			if text == "" {
				text = "(no output)"
			}
			res.Content = append(res.Content, sdk.BetaToolResultBlockParamContentUnion{OfText: &sdk.BetaTextBlockParam{Text: text}})
		}
		for _, img := range r.Images {
			res.Content = append(res.Content, sdk.BetaToolResultBlockParamContentUnion{OfImage: imageBlock(img)})
		}
		blocks = append(blocks, sdk.BetaContentBlockParamUnion{OfToolResult: &res})
	}
	if strings.TrimSpace(m.Text) != "" {
		blocks = append(blocks, sdk.NewBetaTextBlock(m.Text))
	}
	for _, img := range m.Images {
		blocks = append(blocks, sdk.BetaContentBlockParamUnion{OfImage: imageBlock(img)})
	}
	if len(blocks) == 0 {
		// The API refuses empty messages and empty text blocks.
		blocks = append(blocks, sdk.NewBetaTextBlock("(empty)"))
	}
	return blocks
}

func imageBlock(img llm.Image) *sdk.BetaImageBlockParam {
	return &sdk.BetaImageBlockParam{Source: sdk.BetaImageBlockParamSourceUnion{OfBase64: &sdk.BetaBase64ImageSourceParam{
		Data:      base64.StdEncoding.EncodeToString(img.Data),
		MediaType: sdk.BetaBase64ImageSourceMediaType(img.MediaType),
	}}}
}

// inputSchema splits a JSON Schema object into the SDK's fields.
func inputSchema(raw json.RawMessage) (sdk.BetaToolInputSchemaParam, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return sdk.BetaToolInputSchemaParam{}, err
	}
	s := sdk.BetaToolInputSchemaParam{Properties: m["properties"]}
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

func convertResponse(msg *sdk.BetaMessage) *llm.Response {
	out := &llm.Response{Model: string(msg.Model)}
	var text []string
	var thinking []llm.Thinking
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "thinking":
			thinking = append(thinking, llm.Thinking{Text: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			thinking = append(thinking, llm.Thinking{Redacted: b.Data})
		case "tool_use":
			input := b.Input
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Input: input})
		}
	}
	out.Text = strings.Join(text, "\n\n")
	out.Reasoning = llm.ThinkingReasoning(thinking)
	switch msg.StopReason {
	case sdk.BetaStopReasonToolUse:
		out.StopReason = llm.StopToolUse
	case sdk.BetaStopReasonEndTurn, sdk.BetaStopReasonStopSequence:
		out.StopReason = llm.StopEndTurn
	case sdk.BetaStopReasonMaxTokens:
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
