package agent

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/anthropic"
	"github.com/drydockhq/drydock/llm/openai"
	"github.com/drydockhq/drydock/llm/tokens"
	"github.com/drydockhq/drydock/toolbox"
)

// Providers.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// Default models, used when neither the config nor the job names one.
const (
	DefaultOpenAIModel    = "gpt-4.1"
	DefaultAnthropicModel = "claude-sonnet-4-5"
)

// Config configures the agent. Zero values take the defaults.
type Config struct {
	// Provider is "openai" or "anthropic"; "" is none, and every job then
	// fails saying how to configure one. The package reads no environment:
	// the server's composition root (cmd/drydock) picks the provider and
	// its credentials from it.
	Provider string
	// Model is the default model; a job's model overrides it.
	Model string
	// APIKey, AuthToken (Anthropic's bearer token, used when there is no
	// key) and BaseURL are the provider's credentials and endpoint.
	APIKey    string
	AuthToken string
	BaseURL   string
	// Environ is the server's environment (os.Environ's form): the values
	// of its secret-looking variables are masked out of the job's events
	// and errors, as are APIKey and AuthToken.
	Environ []string
	// MaxRetries and RequestTimeout configure the provider's retries (see
	// llm/openai and llm/anthropic for the defaults).
	MaxRetries     int
	RequestTimeout time.Duration
	// OpenAIAPI is "auto" (default), "responses" or "chat": the wire API
	// of the openai provider (see openai.UsesResponses).
	OpenAIAPI string
	// ReasoningEffort is the openai provider's reasoning effort: "high",
	// or per model prefix "gpt-5=high,o4-mini=low" (openai.Config).
	ReasoningEffort string

	// MaxSteps is the step budget of jobs that set none (default 100).
	MaxSteps int
	// MaxTokens and MaxCostUSD bound one job's model usage; 0 is no limit.
	MaxTokens  int64
	MaxCostUSD float64
	// MaxOutputTokens caps one reply of the model (default 8192).
	MaxOutputTokens int
	// ThinkingBudget is the extended-thinking budget of models that can
	// think (Anthropic): 0 takes the model's default (llm.Model), negative
	// turns thinking off. It comes on top of MaxOutputTokens.
	ThinkingBudget int
	// Images is "auto" (default: what is known of the model; unknown
	// OpenAI-compatible models get none), "on" or "off": whether
	// screenshots and figures are shown to the model.
	Images string
	// KeepImages is how many recent observations keep their images in the
	// prompt (default 3).
	KeepImages int
	// StuckLimit is how many repeats of the same action and result earn a
	// warning (default 3); see the package doc.
	StuckLimit int
	// MaxObservationBytes caps one tool result in the prompt and the log
	// (default 40000; less when the context budget is small); the whole
	// output is saved in the workspace.
	MaxObservationBytes int
	// ContextBudget is the largest prompt, in tokens, of jobs that set
	// none (JobSpec.ContextBudget); 0 derives it from the model's
	// context window less MaxOutputTokens. A known model's window is never
	// exceeded.
	ContextBudget int
	// KeepObservations is how many of the latest tool results keep their
	// whole output in the prompt (default 20); older ones are masked, and
	// the oldest steps summarized when the budget is reached (see
	// agent/transcript).
	KeepObservations int
	// Tool timeouts (see agent/tools.Env for the defaults).
	BashTimeout     time.Duration
	BashIdleTimeout time.Duration
	CodeTimeout     time.Duration
	// AskTimeout is how long ask_user waits for an answer (default 30m).
	AskTimeout time.Duration

	// Dial returns the client of a sandbox's toolboxd (default toolbox.New).
	Dial func(*drydock.Sandbox) *toolbox.Client
	// LLM, when set, is used instead of building a provider from the
	// settings above (other providers, tests).
	LLM llm.Provider
	// Now is the clock (tests).
	Now func() time.Time
}

// Agent is the LLM agent.
type Agent struct {
	cfg      Config
	provider llm.Provider
	// unconfigured is the error every job gets when no provider could be
	// built (no key); the server still starts.
	unconfigured error
	log          *slog.Logger
	mask         *masker
}

var _ drydock.Agent = (*Agent)(nil)

// New builds the agent. An unknown provider name is an error; a provider
// without credentials is not (the server can start), but Check reports it
// and every job fails at once with the message.
func New(cfg Config, log *slog.Logger) (*Agent, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 100
	}
	if cfg.MaxOutputTokens <= 0 {
		cfg.MaxOutputTokens = 8192
	}
	if cfg.KeepImages <= 0 {
		cfg.KeepImages = 3
	}
	if cfg.AskTimeout <= 0 {
		cfg.AskTimeout = defaultAskTimeout
	}
	if cfg.StuckLimit <= 0 {
		cfg.StuckLimit = 3
	}
	if cfg.MaxObservationBytes <= 0 {
		cfg.MaxObservationBytes = 40000
	}
	if cfg.KeepObservations <= 0 {
		cfg.KeepObservations = transcript.DefaultKeepObservations
	}
	if cfg.ContextBudget < 0 || cfg.ContextBudget > 0 && cfg.ContextBudget < tokens.MinBudget {
		return nil, drydock.Errorf(drydock.EINVALID, "the context budget must be at least %d tokens", tokens.MinBudget)
	}
	if cfg.ThinkingBudget > 0 && cfg.ThinkingBudget < anthropic.MinThinkingBudget {
		return nil, drydock.Errorf(drydock.EINVALID, "the thinking budget must be at least %d tokens (or negative to turn thinking off), not %d", anthropic.MinThinkingBudget, cfg.ThinkingBudget)
	}
	switch cfg.Provider {
	case "", ProviderOpenAI, ProviderAnthropic:
	default:
		return nil, drydock.Errorf(drydock.EINVALID, "unknown LLM provider %q: use openai or anthropic", cfg.Provider)
	}
	switch cfg.OpenAIAPI {
	case "", openai.APIAuto, openai.APIResponses, openai.APIChat:
	default:
		return nil, drydock.Errorf(drydock.EINVALID, "the OpenAI API must be auto, responses or chat, not %q", cfg.OpenAIAPI)
	}
	if err := openai.CheckReasoningEffort(cfg.ReasoningEffort); err != nil {
		return nil, err
	}
	switch cfg.Images {
	case "", "auto", "on", "off":
	default:
		return nil, drydock.Errorf(drydock.EINVALID, "images must be auto, on or off, not %q", cfg.Images)
	}
	if cfg.Dial == nil {
		cfg.Dial = func(sb *drydock.Sandbox) *toolbox.Client { return toolbox.New(sb.Endpoint, sb.Token) }
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	a := &Agent{cfg: cfg, log: log.With("component", "agent"), mask: newMasker(cfg.Environ, cfg.APIKey, cfg.AuthToken)}
	if cfg.LLM != nil {
		a.provider = cfg.LLM
		return a, nil
	}
	p, err := newProvider(cfg)
	if err != nil {
		// No provider or no credentials: the server starts, and says why
		// jobs fail.
		a.unconfigured = err
		return a, nil
	}
	a.provider = p
	return a, nil
}

// errNoProvider is the error of every job when no provider is configured.
var errNoProvider = drydock.Errorf(drydock.EINVALID, "no LLM provider configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for an OpenAI-compatible server) or ANTHROPIC_API_KEY in the server's environment, and choose it with --llm openai|anthropic")

// newProvider builds the named provider from the config's values.
func newProvider(cfg Config) (llm.Provider, error) {
	switch cfg.Provider {
	case ProviderOpenAI:
		return openai.New(openai.Config{APIKey: cfg.APIKey, BaseURL: cfg.BaseURL, MaxRetries: cfg.MaxRetries, RequestTimeout: cfg.RequestTimeout,
			API: cfg.OpenAIAPI, ReasoningEffort: cfg.ReasoningEffort})
	case ProviderAnthropic:
		return anthropic.New(anthropic.Config{APIKey: cfg.APIKey, AuthToken: cfg.AuthToken, BaseURL: cfg.BaseURL, MaxRetries: cfg.MaxRetries, RequestTimeout: cfg.RequestTimeout, ThinkingBudget: cfg.ThinkingBudget})
	}
	return nil, errNoProvider
}

// Check returns why jobs cannot run (no provider or no key), or nil.
func (a *Agent) Check() error { return a.unconfigured }

// Provider names the provider jobs use ("" when none is configured).
func (a *Agent) Provider() string {
	if a.provider == nil {
		return ""
	}
	return a.provider.Name()
}

// Model is the model of a job: its own, else the configured default, else
// the provider's default.
func (a *Agent) Model(job *drydock.Job) string {
	switch {
	case job != nil && job.Model != "":
		return job.Model
	case a.cfg.Model != "":
		return a.cfg.Model
	case a.Provider() == ProviderAnthropic:
		return DefaultAnthropicModel
	}
	return DefaultOpenAIModel
}

// acceptsImages decides whether the model is shown images.
func (a *Agent) acceptsImages(model string) bool {
	switch a.cfg.Images {
	case "on":
		return true
	case "off":
		return false
	}
	if m, ok := llm.LookupModel(model); ok {
		return m.Images
	}
	// Every Claude model takes images; unknown OpenAI-compatible models
	// (often small local ones) mostly do not.
	return a.Provider() == ProviderAnthropic
}

// Run implements drydock.Agent.
func (a *Agent) Run(ctx context.Context, ar *drydock.AgentRun) (*drydock.AgentOutcome, error) {
	if a.unconfigured != nil {
		return nil, a.unconfigured
	}
	r, err := a.start(ctx, ar)
	if err != nil {
		return nil, err
	}
	defer r.close()
	out, err := r.loop(ctx)
	if err != nil && ctx.Err() == nil {
		err = r.userError(err)
		r.log.Warn("agent run failed", "err", err, "steps", r.steps)
	} else if err == nil {
		r.log.Info("agent finished", "steps", r.steps, "input_tokens", r.usage.InputTokens, "output_tokens", r.usage.OutputTokens, "cost_usd", r.usage.CostUSD)
	}
	return out, err
}

// userError masks secrets out of an error's user-facing message.
func (r *run) userError(err error) error {
	code := drydock.ErrorCode(err)
	if code == drydock.EINTERNAL {
		return fmt.Errorf("%s", r.mask.String(err.Error()))
	}
	msg := drydock.ErrorMessage(err)
	if m := r.mask.String(msg); m != msg {
		return &drydock.Error{Code: code, Message: m}
	}
	return err
}
