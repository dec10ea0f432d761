package openai

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/drydockhq/drydock/llm"
)

// turnState is the llm.Reasoning of a Responses turn: the output items in the
// order the model produced them, reasoning items whole (with their
// encrypted content), the others as references to the turn's text and
// calls. The next requests send them back in that order, which the API
// requires: a function call item that came after a reasoning item must be
// sent with it, just before it.
type turnState struct {
	// Model is the model asked (without a provider prefix): only it can
	// read its reasoning.
	Model string      `json:"model"`
	Items []stateItem `json:"items"`
}

type stateItem struct {
	Type string `json:"type"` // "reasoning", "message" or "function_call"
	ID   string `json:"id,omitempty"`
	// Phase is a message's ("commentary" before calls, "final_answer"),
	// which the newer models want back.
	Phase string `json:"phase,omitempty"`
	// Call indexes the turn's ToolCalls (function_call), so that an id the
	// agent rewrote still finds its call.
	Call int `json:"call,omitempty"`
	// Reasoning: what the model thought, encrypted by OpenAI for its own
	// later use, and the readable summary when one was asked for.
	EncryptedContent string   `json:"encrypted_content,omitempty"`
	Summary          []string `json:"summary,omitempty"`
	// Sum is a SHA-256 of ID and EncryptedContent. The state lives in the
	// agent's event log, which masks secret-shaped strings and clips
	// oversized events; an item altered there fails the check and is left
	// out rather than sent to an API that would refuse the request.
	Sum string `json:"sum,omitempty"`
}

func reasoningSum(id, encrypted string) string {
	h := sha256.New()
	h.Write([]byte(id))
	h.Write([]byte{0})
	h.Write([]byte(encrypted))
	return hex.EncodeToString(h.Sum(nil))
}

// encode returns the turn's llm.Reasoning, or nil when it holds no reasoning
// to carry (the other items are rebuilt from the turn itself).
func (s *turnState) encode() *llm.Reasoning {
	keep := false
	for _, it := range s.Items {
		keep = keep || it.Type == "reasoning"
	}
	if !keep {
		return nil
	}
	data, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	return &llm.Reasoning{Provider: providerName, Data: data}
}

// decodeState reads a turn's state, or nil when the turn has none of
// ours (another provider's, a Chat Completions turn, or unreadable).
func decodeState(st *llm.Reasoning) *turnState {
	if st == nil || st.Provider != providerName {
		return nil
	}
	var s turnState
	if json.Unmarshal(st.Data, &s) != nil {
		return nil
	}
	return &s
}

// sent reports, per item, whether assistantItems sends something for it:
// the turn's text for the first message item, a call not sent yet for a
// function call.
func (s *turnState) sent(m llm.Message) []bool {
	out := make([]bool, len(s.Items))
	text := true
	calls := make([]bool, len(m.ToolCalls))
	for i, it := range s.Items {
		switch it.Type {
		case "message":
			out[i], text = text, false
		case "function_call":
			if it.Call >= 0 && it.Call < len(calls) && !calls[it.Call] {
				out[i], calls[it.Call] = true, true
			}
		}
	}
	return out
}

// intact reports whether a reasoning item is as the API sent it.
func (it stateItem) intact() bool {
	return it.Type == "reasoning" && it.ID != "" && it.EncryptedContent != "" && it.Sum == reasoningSum(it.ID, it.EncryptedContent)
}
