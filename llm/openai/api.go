package openai

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/drydockhq/drydock"
)

// The wire APIs a Provider speaks (Config.API).
const (
	APIAuto      = "auto"      // by model and base URL (UsesResponses)
	APIResponses = "responses" // POST /v1/responses
	APIChat      = "chat"      // POST /v1/chat/completions
)

// responsesFirst matches the models OpenAI serves first (or only) through
// the Responses API: the o-series and gpt-5 onwards (reasoning, and the
// newer models), and the families the SDK lists as Responses-only (codex,
// computer-use, deep-research, the -pro models).
var responsesFirst = regexp.MustCompile(`^(o[1-9]|gpt-([5-9]|[1-9][0-9])|codex|computer-use)|codex|deep-research|-pro\b`)

// reasoningModel matches the models that think before they answer, whose
// reasoning items are carried across turns and which take an effort. The
// gpt-5 chat snapshots ("gpt-5-chat-latest") do not reason.
var reasoningModel = regexp.MustCompile(`^(o[1-9]|gpt-([5-9]|[1-9][0-9])|codex)`)

// bareModel lowercases a model name and drops a provider prefix
// ("openai/gpt-5", as OpenRouter names them).
func bareModel(model string) string {
	model = strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	return model
}

func isReasoning(model string) bool {
	m := bareModel(model)
	return reasoningModel.MatchString(m) && !strings.Contains(m, "-chat")
}

// officialHost reports whether a base URL is OpenAI's own API; an empty
// one is (the SDK's default).
func officialHost(base string) bool {
	if base == "" {
		return true
	}
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	return strings.EqualFold(u.Hostname(), "api.openai.com")
}

// hostOf names a base URL's host for messages, without what else a URL
// can carry (user info, a key in the query).
func hostOf(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "OPENAI_BASE_URL"
	}
	return u.Host
}

// UsesResponses is the rule that chooses the API of one request. An
// explicit "responses" or "chat" wins. Under "auto", a base URL that is not
// OpenAI's (vLLM, Ollama, llama.cpp, a proxy) gets Chat Completions, the
// dialect every OpenAI-compatible server speaks; on OpenAI's API the
// Responses-first models (o-series, gpt-5 onwards, codex, computer-use,
// deep-research, -pro) get Responses and older models Chat Completions.
func UsesResponses(api, baseURL, model string) bool {
	switch api {
	case APIResponses:
		return true
	case APIChat:
		return false
	}
	return officialHost(baseURL) && responsesFirst.MatchString(bareModel(model))
}

// efforts are the reasoning efforts the API takes.
var efforts = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}

// CheckReasoningEffort returns an EINVALID error saying what is wrong
// with a Config.ReasoningEffort, or nil.
func CheckReasoningEffort(s string) error {
	_, err := parseEffort(s)
	return err
}

// effortRule is a parsed Config.ReasoningEffort: a default for reasoning
// models and efforts per model-name prefix.
type effortRule struct {
	all    string
	prefix map[string]string
}

// parseEffort reads "high" (every reasoning model) or
// "gpt-5=high,o4-mini=low,medium" (per model prefix, the longest match
// winning; a bare value is the default for the other reasoning models).
func parseEffort(s string) (effortRule, error) {
	var r effortRule
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		model, effort, named := strings.Cut(part, "=")
		if !named {
			effort, model = model, ""
		}
		model, effort = bareModel(model), strings.ToLower(strings.TrimSpace(effort))
		if !validEffort(effort) {
			return r, drydock.Errorf(drydock.EINVALID, "reasoning effort %q in %q: use one of %s", effort, s, strings.Join(efforts, ", "))
		}
		switch {
		case !named:
			if r.all != "" {
				return r, drydock.Errorf(drydock.EINVALID, "reasoning effort %q gives two defaults: name the model of all but one (MODEL=EFFORT)", s)
			}
			r.all = effort
		case model == "":
			return r, drydock.Errorf(drydock.EINVALID, "reasoning effort %q: a model name is missing before '='", part)
		default:
			if r.prefix == nil {
				r.prefix = map[string]string{}
			}
			r.prefix[model] = effort
		}
	}
	return r, nil
}

func validEffort(e string) bool {
	for _, v := range efforts {
		if e == v {
			return true
		}
	}
	return false
}

// forModel returns the effort to send for a model, "" for none: a named
// prefix applies to whatever model it names (an operator may know that a
// deployment reasons), the default only to reasoning models, since the
// others refuse the parameter.
func (r effortRule) forModel(model string) string {
	m := bareModel(model)
	best, effort := -1, ""
	chat := strings.Contains(m, "-chat")
	for p, e := range r.prefix {
		// "gpt-5=high" means the reasoning gpt-5 models, not the chat
		// snapshots that refuse an effort, unless they are named.
		if chat && !strings.Contains(p, "-chat") {
			continue
		}
		if strings.HasPrefix(m, p) && len(p) > best {
			best, effort = len(p), e
		}
	}
	if best >= 0 {
		return effort
	}
	if isReasoning(model) {
		return r.all
	}
	return ""
}

// reasons reports whether a model's reasoning is to be carried across
// turns: a reasoning model by name, or one the operator gave an effort.
func (r effortRule) reasons(model string) bool {
	return isReasoning(model) || r.forModel(model) != ""
}
