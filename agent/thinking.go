package agent

import (
	"bytes"
	"encoding/json"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/llm"
)

// heldReasoning is a turn's reasoning (the provider's record: Anthropic's
// thinking, OpenAI's encrypted items) that the log would alter. The log
// gets every event masked, but a masked record is an altered one, which the
// provider refuses (a thinking block's signature) or drops (a reasoning
// item's checksum) when it goes back; so the turn is logged without it, and
// the run keeps it in memory for the requests that follow (the model wrote
// it: sending it back discloses nothing new). A restarted run has lost it,
// and the provider then asks without it (see llm/anthropic, llm/openai).
type heldReasoning struct {
	callID    string // the turn's first tool call
	reasoning *llm.Reasoning
}

// keepReasoning puts the reply's reasoning in turn, or holds it when the
// log would alter it: masking a secret in it, or cutting an event over
// drydock.MaxEventDataBytes.
func (r *run) keepReasoning(turn *transcript.ModelTurn, reasoning *llm.Reasoning) {
	r.heldReasoning = heldReasoning{}
	if reasoning == nil {
		return
	}
	turn.Reasoning = reasoning
	whole := bytes.Equal(r.mask.JSON(reasoning.Data), reasoning.Data)
	if data, err := json.Marshal(turn); err != nil {
		whole = false
	} else if len(data) > drydock.MaxEventDataBytes {
		// emit will cut the event's longest strings until it fits: see
		// whether the reasoning comes out of it whole.
		var cut transcript.ModelTurn
		if json.Unmarshal(shrink(data, drydock.MaxEventDataBytes), &cut) != nil || !cut.Reasoning.Equal(reasoning) {
			whole = false
		}
	}
	if whole {
		return
	}
	turn.Reasoning, turn.ReasoningOmitted = nil, true
	if len(turn.ToolCalls) > 0 {
		// Only a turn with tool calls needs its reasoning back: the
		// requests that follow answer its calls.
		r.heldReasoning = heldReasoning{callID: turn.ToolCalls[0].ID, reasoning: reasoning}
	}
}

// restore gives the held reasoning back to its turn in msgs, copying what
// it changes: the transcript shares its messages between prompts.
func (h heldReasoning) restore(msgs []llm.Message) []llm.Message {
	if h.callID == "" {
		return msgs
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != llm.RoleAssistant {
			continue
		}
		if m.Reasoning == nil && len(m.ToolCalls) > 0 && m.ToolCalls[0].ID == h.callID {
			out := append([]llm.Message(nil), msgs...)
			m.Reasoning = h.reasoning
			out[i] = m
			return out
		}
		return msgs // only the latest turn's reasoning is held
	}
	return msgs
}
