package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// Vendor names OpenAI in error messages.
var Vendor = llm.Vendor{Name: "OpenAI", KeyEnv: "OPENAI_API_KEY", BaseURLEnv: "OPENAI_BASE_URL"}

// Config configures a Provider. Zero values take the defaults.
type Config struct {
	// APIKey is the credential and BaseURL, when set, replaces OpenAI's API
	// (an OpenAI-compatible server). A base URL without a key is allowed
	// (local servers often need none). The package never reads them from
	// the environment: the composition root (cmd/drydock) takes them from
	// OPENAI_API_KEY and OPENAI_BASE_URL.
	APIKey  string
	BaseURL string
	// MaxRetries is how many times a request is retried on 408, 409, 429,
	// 5xx, timeouts and dropped connections (default 5). The SDK backs off
	// exponentially from 0.5s, honouring Retry-After.
	MaxRetries int
	// RetryMaxDelay caps one backoff wait (default 30s).
	RetryMaxDelay time.Duration
	// RequestTimeout bounds one attempt, until the answer's headers arrive
	// (default 10m; a long reply of a slow model takes minutes).
	RequestTimeout time.Duration
	// API is "auto" (default), "responses" or "chat": which wire API the
	// requests use (see UsesResponses for the auto rule).
	API string
	// ReasoningEffort is the effort of reasoning models: "high" for all of
	// them, or "gpt-5=high,o4-mini=low" per model-name prefix (the longest
	// wins; a bare value is the default of the others). Naming a model
	// that the rule does not know as reasoning (a deployment's own name)
	// also has its reasoning carried across turns. Empty leaves the
	// model's default.
	ReasoningEffort string
}

// defaultBaseURL is OpenAI's own API, used when Config has no base URL.
const defaultBaseURL = "https://api.openai.com/v1/"

// providerName is Name, and the owner of the llm.Reasoning this package writes.
const providerName = "openai"

// Provider talks to the Responses API or the Chat Completions API, chosen
// per request (Config.API).
type Provider struct {
	client sdk.Client
	api    string
	base   string
	effort effortRule
}

var _ llm.Provider = (*Provider)(nil)

// New returns a provider, or an EINVALID error saying what to set when
// there is neither a key nor a base URL.
func New(cfg Config) (*Provider, error) {
	key, base := cfg.APIKey, cfg.BaseURL
	if key == "" && base == "" {
		return nil, Vendor.NoCredentials()
	}
	switch cfg.API {
	case "":
		cfg.API = APIAuto
	case APIAuto, APIResponses, APIChat:
	default:
		return nil, drydock.Errorf(drydock.EINVALID, "OpenAI API %q: use auto, responses or chat", cfg.API)
	}
	effort, err := parseEffort(cfg.ReasoningEffort)
	if err != nil {
		return nil, err
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 5
	}
	if cfg.RetryMaxDelay == 0 {
		cfg.RetryMaxDelay = 30 * time.Second
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 10 * time.Minute
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// A header timeout, unlike a per-attempt context deadline, fails as a
	// transport error, which the SDK retries.
	tr.ResponseHeaderTimeout = cfg.RequestTimeout
	opts := []option.RequestOption{
		option.WithHTTPClient(&http.Client{Transport: tr}),
		option.WithMaxRetries(max(cfg.MaxRetries, 0)),
		option.WithMaxRetryDelay(cfg.RetryMaxDelay),
		option.WithMiddleware(wholeAnswer),
	}
	// The SDK's client starts from the process's OPENAI_* variables; the
	// key and base URL are set whatever they are, empty included, so that
	// the provider uses what it was given (the composition root read them).
	opts = append(opts, option.WithAPIKey(key), option.WithBaseURL(cmp.Or(base, defaultBaseURL)))
	return &Provider{client: sdk.NewClient(opts...), api: cfg.API, base: base, effort: effort}, nil
}

// wholeAnswer reads each answer to its end inside the attempt. The SDK
// retries an attempt that fails but not an answer whose body ends early (the
// endpoint or a proxy dropping the connection mid-response), which it would
// report as a failure after retries that never happened. The provider never
// streams, so holding the body costs nothing the SDK would not spend anyway.
func wholeAnswer(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil {
		return res, err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("answer cut off after %d bytes: %w", len(body), err)
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	return res, nil
}

// Name implements llm.Provider.
func (p *Provider) Name() string { return providerName }

// Complete implements llm.Provider.
func (p *Provider) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if UsesResponses(p.api, p.base, req.Model) {
		return p.completeResponses(ctx, req)
	}
	params, err := p.buildParams(req)
	if err != nil {
		return nil, err
	}
	res, err := p.client.Chat.Completions.New(ctx, params)
	if err != nil {
		return nil, classify(ctx, err)
	}
	return convertResponse(res)
}

func classify(ctx context.Context, err error) error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return Vendor.APIError(apiErr.StatusCode, apiErr.RawJSON(), err)
	}
	return Vendor.TransportError(ctx, err)
}

func (p *Provider) buildParams(req *llm.Request) (sdk.ChatCompletionNewParams, error) {
	params := sdk.ChatCompletionNewParams{Model: shared.ChatModel(req.Model)}
	if e := p.effort.forModel(req.Model); e != "" {
		params.ReasoningEffort = shared.ReasoningEffort(e)
	}
	if req.MaxTokens > 0 {
		params.MaxCompletionTokens = sdk.Int(int64(req.MaxTokens))
	}
	if req.System != "" {
		params.Messages = append(params.Messages, sdk.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case llm.RoleAssistant:
			params.Messages = append(params.Messages, assistantMessage(m))
		case llm.RoleUser:
			params.Messages = append(params.Messages, userMessages(m)...)
		default:
			return params, fmt.Errorf("openai: message %d has unknown role %q", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		var schema map[string]any
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
			return params, fmt.Errorf("openai: schema of tool %s: %w", t.Name, err)
		}
		params.Tools = append(params.Tools, sdk.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        t.Name,
			Description: sdk.String(t.Description),
			Parameters:  shared.FunctionParameters(schema),
		}))
	}
	if req.NoToolCalls && len(params.Tools) > 0 {
		// The tools stay in the prompt for the prefix cache, which keys on
		// the prompt: tool_choice only constrains the reply.
		params.ToolChoice = sdk.ChatCompletionToolChoiceOptionUnionParam{OfAuto: sdk.String(string(sdk.ChatCompletionToolChoiceOptionAutoNone))}
	}
	return params, nil
}

func assistantMessage(m llm.Message) sdk.ChatCompletionMessageParamUnion {
	var a sdk.ChatCompletionAssistantMessageParam
	if m.Text != "" {
		a.Content.OfString = sdk.String(m.Text)
	}
	for _, c := range m.ToolCalls {
		args := string(llm.ObjectInput(c.Input))
		a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
				ID:       c.ID,
				Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: args},
			},
		})
	}
	return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// userMessages turns one user turn into tool messages (one per result, in
// order) followed by a user message with the text and every image, since
// tool messages cannot carry images.
func userMessages(m llm.Message) []sdk.ChatCompletionMessageParamUnion {
	var out []sdk.ChatCompletionMessageParamUnion
	var parts []sdk.ChatCompletionContentPartUnionParam
	for _, r := range m.ToolResults {
		text := r.Output
		if r.IsError {
			text = "Error: " + text
		}
		if text == "" {
			text = "(no output)"
		}
		out = append(out, sdk.ToolMessage(text, r.CallID))
		if len(r.Images) > 0 {
			parts = append(parts, sdk.TextContentPart(fmt.Sprintf("Image(s) returned by the %s tool call %s:", r.Name, r.CallID)))
			parts = append(parts, imageParts(r.Images)...)
		}
	}
	if m.Text != "" {
		parts = append(parts, sdk.TextContentPart(m.Text))
	}
	parts = append(parts, imageParts(m.Images)...)
	switch {
	case len(parts) == 1 && parts[0].OfText != nil:
		out = append(out, sdk.UserMessage(parts[0].OfText.Text))
	case len(parts) > 0:
		out = append(out, sdk.UserMessage(parts))
	}
	return out
}

func imageParts(images []llm.Image) []sdk.ChatCompletionContentPartUnionParam {
	var parts []sdk.ChatCompletionContentPartUnionParam
	for _, img := range images {
		url := "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
		parts = append(parts, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: url}))
	}
	return parts
}

func convertResponse(res *sdk.ChatCompletion) (*llm.Response, error) {
	if len(res.Choices) == 0 {
		return nil, drydock.Errorf(drydock.EUNAVAILABLE, "the %s API answered without a choice (model %s)", Vendor.Name, res.Model)
	}
	ch := res.Choices[0]
	out := &llm.Response{Model: res.Model, Text: ch.Message.Content}
	if out.Text == "" && ch.Message.Refusal != "" {
		out.Text = ch.Message.Refusal
	}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		args := strings.TrimSpace(tc.Function.Arguments)
		if args == "" {
			args = "{}"
		}
		input := json.RawMessage(args)
		if !json.Valid(input) {
			// Keep the turn: the agent answers the call with an error
			// observation, which a model can correct; the raw text is kept
			// as a JSON string so the conversation stays valid.
			input, _ = json.Marshal(args)
		}
		out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Input: input})
	}
	switch ch.FinishReason {
	case "tool_calls", "function_call":
		out.StopReason = llm.StopToolUse
	case "length":
		out.StopReason = llm.StopMaxTokens
	case "stop":
		out.StopReason = llm.StopEndTurn
	default:
		out.StopReason = llm.StopOther
	}
	if len(out.ToolCalls) > 0 && out.StopReason != llm.StopMaxTokens {
		out.StopReason = llm.StopToolUse
	}
	u := res.Usage
	cached := u.PromptTokensDetails.CachedTokens
	written := u.PromptTokensDetails.CacheWriteTokens
	out.Usage = llm.Usage{
		InputTokens:      max(u.PromptTokens-cached-written, 0),
		OutputTokens:     u.CompletionTokens,
		CacheReadTokens:  cached,
		CacheWriteTokens: written,
	}
	return out, nil
}
