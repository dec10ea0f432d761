package agent

import (
	"encoding/json"
	"slices"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/llm"
)

// heldThinking is a turn's thinking that holds a secret. The log gets
// every event masked, but a masked thinking block is an altered one, which
// the provider refuses when it goes back; so the turn is logged without
// it, and the run keeps it in memory for the requests that follow (the
// model wrote it: sending it back discloses nothing new). A restarted run
// has lost it, and the provider then asks without thinking until the
// tool-use loop ends (see llm/anthropic).
type heldThinking struct {
	callID   string // the turn's first tool call
	thinking []llm.Thinking
}

// keepThinking puts the reply's thinking in turn, or holds it when the
// log would alter it: masking a secret in it, or cutting an event over
// drydock.MaxEventDataBytes.
func (r *run) keepThinking(turn *transcript.ModelTurn, thinking []llm.Thinking) {
	r.heldThinking = heldThinking{}
	if len(thinking) == 0 {
		return
	}
	turn.Thinking = thinking
	whole := true
	for _, b := range thinking {
		if r.mask.String(b.Text) != b.Text || r.mask.String(b.Signature) != b.Signature || r.mask.String(b.Redacted) != b.Redacted {
			whole = false
		}
	}
	if data, err := json.Marshal(turn); err != nil {
		whole = false
	} else if len(data) > drydock.MaxEventDataBytes {
		// emit will cut the event's longest strings until it fits: see
		// whether the thinking comes out of it whole.
		var cut transcript.ModelTurn
		if json.Unmarshal(shrink(data, drydock.MaxEventDataBytes), &cut) != nil || !slices.Equal(cut.Thinking, thinking) {
			whole = false
		}
	}
	if whole {
		return
	}
	turn.Thinking, turn.ThinkingOmitted = nil, true
	if len(turn.ToolCalls) > 0 {
		// Only a turn with tool calls needs its thinking back.
		r.heldThinking = heldThinking{callID: turn.ToolCalls[0].ID, thinking: thinking}
	}
}

// restore gives the held thinking back to its turn in msgs, copying what
// it changes: the transcript shares its messages between prompts.
func (h heldThinking) restore(msgs []llm.Message) []llm.Message {
	if h.callID == "" {
		return msgs
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != llm.RoleAssistant {
			continue
		}
		if len(m.Thinking) == 0 && len(m.ToolCalls) > 0 && m.ToolCalls[0].ID == h.callID {
			out := append([]llm.Message(nil), msgs...)
			m.Thinking = h.thinking
			out[i] = m
			return out
		}
		return msgs // only the latest turn's thinking matters
	}
	return msgs
}
