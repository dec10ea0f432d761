package transcript

import (
	"encoding/json"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
)

// ModelTurn is the data of an EventModel event: one reply of the model,
// with the provider's own types. Its JSON is a drydock.ModelEvent (a test
// checks the fields match).
type ModelTurn struct {
	Step  int    `json:"step"`
	Model string `json:"model,omitempty"`
	// Reasoning is the provider's record of the turn's reasoning
	// (Anthropic's signed thinking blocks, OpenAI's encrypted reasoning
	// items), kept whole since the provider checks it when it goes back
	// with the turn in later prompts, a resumed run's included.
	Reasoning *llm.Reasoning `json:"reasoning,omitempty"`
	// ReasoningOmitted says the turn's reasoning was left out of the log:
	// it held a secret, or made the event too large to keep whole, and
	// masking or cutting it would have broken it.
	ReasoningOmitted bool           `json:"reasoning_omitted,omitempty"`
	Text             string         `json:"text,omitempty"`
	ToolCalls        []llm.ToolCall `json:"tool_calls,omitempty"`
	StopReason       string         `json:"stop_reason,omitempty"`
}

// UnmarshalJSON also reads the model events written before the provider's
// record was one field: Anthropic's blocks in "thinking" (with
// "thinking_omitted"), OpenAI's record in "state".
func (t *ModelTurn) UnmarshalJSON(data []byte) error {
	type plain ModelTurn
	var v struct {
		plain
		Thinking        []llm.Thinking `json:"thinking"`
		ThinkingOmitted bool           `json:"thinking_omitted"`
		State           *llm.Reasoning `json:"state"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*t = ModelTurn(v.plain)
	switch {
	case t.Reasoning != nil:
	case v.State != nil:
		t.Reasoning = v.State
	default:
		t.Reasoning = llm.ThinkingReasoning(v.Thinking)
	}
	t.ReasoningOmitted = t.ReasoningOmitted || v.ThinkingOmitted
	return nil
}

// The data of the agent's events are the root package's types; these
// names keep the agent's code short.
type (
	// ToolCall is written as the call starts; the model turn already
	// holds it, this one is for watchers.
	ToolCall = drydock.ToolCallEvent
	// Observation is what a tool call returned, as the model sees it.
	Observation = drydock.ObservationEvent
	// ImageRef names an image a tool returned, stored in the workspace.
	ImageRef = drydock.ImageRef
	// Notice is an EventLog event that the agent addressed to the model
	// (Notice set: a nudge, a stuck warning, a budget note, a message).
	// Log events without Notice are for people only and stay out of the
	// prompt.
	Notice = drydock.LogEvent
)

// Options shape the conversation.
type Options struct {
	// Task is the job's task, the first user message.
	Task string
	// Image returns the picture a reference names, when it is at hand.
	Image func(ImageRef) (llm.Image, bool)
	// KeepImages is how many of the latest observations with images show
	// them; older ones (and all, when 0) name the files instead. Screenshots
	// are large and old ones rarely matter.
	KeepImages int
}

// Continue is the user message sent after a model turn that neither called
// a tool nor got a notice, since both APIs want the user to speak next.
const Continue = "Continue with the task. Use the tools; call finish with a summary when the task is done."

// Messages builds the whole conversation from the job's events, without a
// budget (Window builds the budgeted one): the task, then for every model
// turn an assistant message and a user message with one result per tool
// call (in call order; a call without an observation gets an error result
// saying it was interrupted), with notices appended as text. Events of
// other types, and observations that match no call, are left out. The
// result always starts and ends with a user message.
func Messages(events []*drydock.Event, opt Options) []llm.Message {
	var l log
	l.read(events)
	msgs := []llm.Message{{Role: llm.RoleUser, Text: joinAll(opt.Task, l.head)}}
	show := imageKeepers(l.units, opt.KeepImages, 0)
	for _, u := range l.units {
		a, m := u.messages(render{show: show}, opt.Image)
		msgs = append(msgs, a, m)
	}
	return msgs
}

// imageKeepers marks the latest n results with images among the units
// after step masked (whose results are masked, images included).
func imageKeepers(units []*unit, n, masked int) map[*Observation]bool {
	keep := map[*Observation]bool{}
	for i := len(units) - 1; i >= 0 && len(keep) < n && units[i].step > masked; i-- {
		pics := units[i].pictured()
		for k := len(pics) - 1; k >= 0 && len(keep) < n; k-- {
			keep[pics[k]] = true
		}
	}
	return keep
}

func joinAll(first string, rest []string) string {
	for _, s := range rest {
		first = join(first, s)
	}
	return first
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}
