package llm

import (
	"bytes"
	"encoding/json"
)

// Reasoning is a provider's opaque record of the model's reasoning in an
// assistant turn, which must go back to the same provider, unchanged, with
// the turn in later requests: Anthropic's signed thinking blocks (see
// Thinking), OpenAI's encrypted reasoning items (Responses API). The model
// keeps its chain of thought across turns without server-side state.
//
// Only the provider named reads Data; others ignore it (a job moved to
// another provider loses its reasoning, which both APIs accept). Data is
// JSON so that the agent can keep it in its event log; since the log masks
// and clips events, the agent keeps a record that either would alter out
// of the log (holding it in memory instead), and a provider must survive
// finding it altered anyway.
type Reasoning struct {
	Provider string          `json:"provider"` // Provider.Name of the writer
	Data     json.RawMessage `json:"data"`
}

// ProviderAnthropic is the Provider of Reasoning that holds thinking
// blocks.
const ProviderAnthropic = "anthropic"

// Thinking is a block of the model's reasoning (Anthropic's extended
// thinking) as the provider returned it. It goes back unchanged with the
// turn that produced it: the API checks Signature, and refuses a tool
// result whose turn lost its thinking. A redacted block carries only
// Redacted, the reasoning encrypted by the provider.
type Thinking struct {
	Text      string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Redacted  string `json:"redacted,omitempty"`
}

// ThinkingReasoning returns thinking blocks as a turn's Reasoning, or nil
// for none.
func ThinkingReasoning(blocks []Thinking) *Reasoning {
	if len(blocks) == 0 {
		return nil
	}
	data, err := json.Marshal(blocks)
	if err != nil {
		return nil // strings and nothing else: cannot happen
	}
	return &Reasoning{Provider: ProviderAnthropic, Data: data}
}

// Thinking returns the thinking blocks r holds: none when r is nil,
// another provider's, or not readable as blocks.
func (r *Reasoning) Thinking() []Thinking {
	if r == nil || r.Provider != ProviderAnthropic {
		return nil
	}
	var blocks []Thinking
	if json.Unmarshal(r.Data, &blocks) != nil {
		return nil
	}
	return blocks
}

// LatestOnly reports whether the reasoning matters only to the latest
// turns, so that a prompt may leave it out of the older turns it shows
// shortened: Anthropic's API uses the thinking of the current tool-use loop
// only (and strips the rest), while OpenAI's items go back, in order, with
// every turn that is shown.
func (r *Reasoning) LatestOnly() bool {
	return r != nil && r.Provider == ProviderAnthropic
}

// Equal reports whether r and o are the same record, byte for byte once
// compacted (a record that went through JSON comes back compacted).
func (r *Reasoning) Equal(o *Reasoning) bool {
	if r == nil || o == nil {
		return r == o
	}
	if r.Provider != o.Provider {
		return false
	}
	var a, b bytes.Buffer
	if json.Compact(&a, r.Data) != nil || json.Compact(&b, o.Data) != nil {
		return bytes.Equal(r.Data, o.Data)
	}
	return bytes.Equal(a.Bytes(), b.Bytes())
}
