package transcript

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
)

// ModelTurn is the data of an EventModel event: one reply of the model.
type ModelTurn struct {
	Step       int            `json:"step"`
	Model      string         `json:"model,omitempty"`
	Text       string         `json:"text,omitempty"`
	ToolCalls  []llm.ToolCall `json:"tool_calls,omitempty"`
	StopReason string         `json:"stop_reason,omitempty"`
}

// ToolCall is the data of an EventToolCall event, written as the call
// starts; the model turn already holds it, this one is for watchers.
type ToolCall struct {
	Step  int             `json:"step"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// Observation is the data of an EventObservation event: what a tool call
// returned, as the model sees it.
type Observation struct {
	Step    int    `json:"step"`
	ID      string `json:"id"`
	Name    string `json:"name"`
	Output  string `json:"output"`
	IsError bool   `json:"is_error,omitempty"`
	// Images are kept as files in the workspace, not in the log.
	Images []ImageRef `json:"images,omitempty"`
	// OutputPath names the file (relative to the workspace) that holds the
	// whole output when Output had to be cut.
	OutputPath string `json:"output_path,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	// Summary is set on the observation of a successful finish call.
	Summary string `json:"summary,omitempty"`
	// Interrupted marks a call that an orchestrator restart cut short; its
	// effect is unknown.
	Interrupted bool `json:"interrupted,omitempty"`
}

// ImageRef names an image a tool returned, stored in the workspace.
type ImageRef struct {
	Path      string `json:"path"` // relative to the workspace
	MediaType string `json:"media_type"`
	Width     int    `json:"width,omitempty"`
	Height    int    `json:"height,omitempty"`
}

// Notice is the data of an EventLog event that the agent addressed to the
// model (a nudge, a stuck warning, a budget note). Log events without
// Notice are for people only and stay out of the prompt.
type Notice struct {
	Level   string `json:"level"`
	Message string `json:"message"`
	Notice  bool   `json:"notice"`
	Step    int    `json:"step,omitempty"`
}

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

// Messages builds the conversation from the job's events: the task, then
// for every model turn an assistant message and a user message with one
// result per tool call (in call order; a call without an observation gets
// an error result saying it was interrupted), with notices appended as
// text. Events of other types, and observations that match no call, are
// left out. The result always starts and ends with a user message.
func Messages(events []*drydock.Event, opt Options) []llm.Message {
	keep := imageKeepers(events, opt.KeepImages)
	msgs := []llm.Message{{Role: llm.RoleUser, Text: opt.Task}}
	// msgs[cur] is the user turn being assembled; calls are the tool calls
	// it must answer, results their answers so far.
	cur := 0
	var calls []llm.ToolCall
	var results []*llm.ToolResult
	closeTurn := func() {
		if len(calls) == 0 {
			return
		}
		for i, c := range calls {
			r := results[i]
			if r == nil {
				r = &llm.ToolResult{CallID: c.ID, Name: c.Name, IsError: true,
					Output: "This tool call was interrupted before it returned; its effect is unknown. Check the state before repeating it."}
			}
			msgs[cur].ToolResults = append(msgs[cur].ToolResults, *r)
		}
		calls, results = nil, nil
	}
	for i, e := range events {
		switch e.Type {
		case drydock.EventModel:
			var t ModelTurn
			if json.Unmarshal(e.Data, &t) != nil {
				continue
			}
			closeTurn()
			if strings.TrimSpace(t.Text) == "" && len(t.ToolCalls) == 0 {
				continue // nothing to show; what follows joins the current user turn
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Text: t.Text, ToolCalls: t.ToolCalls},
				llm.Message{Role: llm.RoleUser})
			cur = len(msgs) - 1
			calls = t.ToolCalls
			results = make([]*llm.ToolResult, len(calls))
		case drydock.EventObservation:
			var o Observation
			if json.Unmarshal(e.Data, &o) != nil {
				continue
			}
			for k, c := range calls {
				if c.ID == o.ID && results[k] == nil {
					results[k] = result(o, keep[i], opt)
					break
				}
			}
		case drydock.EventLog:
			var n Notice
			if json.Unmarshal(e.Data, &n) != nil || !n.Notice || n.Message == "" {
				continue
			}
			msgs[cur].Text = join(msgs[cur].Text, n.Message)
		}
	}
	closeTurn()
	// Drop a trailing empty user turn (a turn with neither results nor text
	// cannot be sent), then make sure the user speaks last.
	if last := msgs[len(msgs)-1]; last.Role == llm.RoleUser && last.Text == "" && len(last.ToolResults) == 0 && len(last.Images) == 0 {
		msgs = msgs[:len(msgs)-1]
	}
	if msgs[len(msgs)-1].Role == llm.RoleAssistant {
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Text: Continue})
	}
	return msgs
}

func result(o Observation, showImages bool, opt Options) *llm.ToolResult {
	r := &llm.ToolResult{CallID: o.ID, Name: o.Name, Output: o.Output, IsError: o.IsError}
	for _, ref := range o.Images {
		if showImages && opt.Image != nil {
			if img, ok := opt.Image(ref); ok {
				r.Images = append(r.Images, img)
				continue
			}
		}
		r.Output = join(r.Output, fmt.Sprintf("[image not shown: %s]", ref.Path))
	}
	return r
}

// imageKeepers marks the indexes of the latest n observations with images.
func imageKeepers(events []*drydock.Event, n int) map[int]bool {
	keep := map[int]bool{}
	for i := len(events) - 1; i >= 0 && len(keep) < n; i-- {
		if events[i].Type != drydock.EventObservation {
			continue
		}
		var o struct {
			Images []ImageRef `json:"images"`
		}
		if json.Unmarshal(events[i].Data, &o) == nil && len(o.Images) > 0 {
			keep[i] = true
		}
	}
	return keep
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
