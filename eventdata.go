package drydock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
)

// The data of each kind of event. Writers (the runner, the agent, the API,
// the stores) build these, readers (the CLI, the agent's transcript)
// decode into them, and /openapi.json documents them: one vocabulary, used
// both ways. Stored logs outlive the code, so a field is never renamed or
// retyped; a new one is optional (omitempty) and readers tolerate its
// absence. EventDataTypes maps every kind to its type, and CheckEventData
// says whether a payload is exactly its kind's.

// StatusEvent is the data of an EventStatus event: a lifecycle transition.
type StatusEvent struct {
	Status JobStatus `json:"status"`
	// Error says why the job ended in error (or why it was cancelled).
	Error string `json:"error,omitempty"`
	// Node names the server that started running the job.
	Node string `json:"node,omitempty"`
}

// LogEvent is the data of an EventLog event: an orchestrator's or the
// agent's note about the job. Level and Message are always there; Kind,
// when set, says which note it is (LogMessageDelivered, LogAskUser, ...)
// and which of the other fields it carries. Notice marks notes the agent's
// model reads too, where the note stands in the log.
type LogEvent struct {
	Level   string `json:"level"` // info, warn or error
	Message string `json:"message"`
	Notice  bool   `json:"notice,omitempty"`
	Kind    string `json:"kind,omitempty"`
	// Step is the agent's step the note belongs to.
	Step int `json:"step,omitempty"`
	// Images are screenshots a notice shows the model (a held sandbox's
	// desktop when the agent takes over).
	Images []ImageRef `json:"images,omitempty"`

	// Seq is the user_message event delivered (message_delivered) or never
	// delivered (message_undelivered); From names who sent it.
	Seq  int64  `json:"seq,omitempty"`
	From string `json:"from,omitempty"`
	// Question is what the agent asks the user (ask_user).
	Question string `json:"question,omitempty"`

	// The context manager's notes (context_mask, context_cut): the steps
	// masked or cut and the prompt's size before and after, in tokens.
	ThroughStep  int `json:"through_step,omitempty"`
	TokensBefore int `json:"tokens_before,omitempty"`
	TokensAfter  int `json:"tokens_after,omitempty"`
	Budget       int `json:"budget,omitempty"`

	// Session is the shell whose command a recovery interrupted.
	Session string `json:"session,omitempty"`
	// Node and Attempt: the server that resumed the job, and which start
	// this is.
	Node    string `json:"node,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// SandboxID and Isolation: the job's sandbox (kinds sandbox and
	// sandbox_held) and what isolates it.
	SandboxID string `json:"sandbox_id,omitempty"`
	Isolation string `json:"isolation,omitempty"`

	// The repository cloned (repo_cloned) or pushed to (repo_pushed).
	URL    string `json:"url,omitempty"`
	Ref    string `json:"ref,omitempty"`
	Branch string `json:"branch,omitempty"`
	Commit string `json:"commit,omitempty"`

	// Seed is "upload" on the note of a seeded workspace (what a recovery
	// looks for), with what the archive held.
	Seed  string `json:"seed,omitempty"`
	Files int    `json:"files,omitempty"`
	Dirs  int    `json:"dirs,omitempty"`
	Links int    `json:"links,omitempty"`
	Bytes int64  `json:"bytes,omitempty"`

	// Egress records a change of the allowlist or a refused connection.
	Egress *EgressNote `json:"egress,omitempty"`

	// What the caller did in a held sandbox: a command (caller_command)
	// or a file written (caller_write). ExitCode is there, 0 included,
	// on every caller_command: readers (an eval's check) look for it.
	Command     string `json:"command,omitempty"`
	ExitCode    *int   `json:"exit_code,omitempty"`
	OutputBytes int64  `json:"output_bytes,omitempty"`
	Path        string `json:"path,omitempty"`
	Size        int64  `json:"size,omitempty"`
}

// Kinds of LogEvent written by the runner and the API (the messages' kinds
// are in event.go, the context manager's in agent/transcript).
const (
	// LogSandbox: the job's new sandbox, and what isolates it.
	LogSandbox = "sandbox"
	// LogSandboxHeld: a job of agent "none" has its sandbox ready for the
	// caller; commands and writes are accepted from then on.
	LogSandboxHeld = "sandbox_held"
	// LogRepoCloned: the workspace holds the job's repository (a notice);
	// a recovered job finds its commit here and does not clone again.
	LogRepoCloned = "repo_cloned"
	// LogRepoPushed: a completed job's changes were pushed.
	LogRepoPushed = "repo_pushed"
	// LogDiffBaseline: the commit of the workspace's starting point for the
	// diff, kept here, outside the sandbox, to check the sandbox's copy by.
	LogDiffBaseline = "diff_baseline"
	// LogCallerCommand and LogCallerWrite: what the caller did in a held
	// sandbox.
	LogCallerCommand = "caller_command"
	LogCallerWrite   = "caller_write"
)

// LogKind is the kind of a log event: "" for other events, log events
// without one and data that does not decode.
func LogKind(e *Event) string {
	if e.Type != EventLog {
		return ""
	}
	var d struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(e.Data, &d) != nil {
		return ""
	}
	return d.Kind
}

// EgressNote is the egress part of a LogEvent: a changed allowlist (List,
// present even when empty, which allows nothing; Added, Removed, By) or a
// refused connection (Dest, Status, Reason, NotRecorded).
type EgressNote struct {
	List    []string `json:"list,omitzero"`
	Added   []string `json:"added,omitzero"`
	Removed []string `json:"removed,omitzero"`
	By      string   `json:"by,omitempty"`

	Dest   string `json:"dest,omitempty"`
	Status int    `json:"status,omitempty"`
	Reason string `json:"reason,omitempty"`
	// NotRecorded counts earlier refusals of Dest that were not logged
	// one by one.
	NotRecorded int `json:"not_recorded,omitempty"`
}

// ModelEvent is the data of an EventModel event: one model turn.
type ModelEvent struct {
	Step  int    `json:"step"`
	Model string `json:"model,omitempty"`
	// Reasoning is the provider's own record of the turn's reasoning
	// (Anthropic's signed thinking blocks, OpenAI's encrypted reasoning),
	// {"provider", "data"}, sent back unchanged with the turn; readers
	// other than the agent leave it alone.
	Reasoning json.RawMessage `json:"reasoning,omitempty"`
	// ReasoningOmitted: the turn's reasoning held a secret or was too
	// large to keep whole, and was left out of the log.
	ReasoningOmitted bool            `json:"reasoning_omitted,omitempty"`
	Text             string          `json:"text,omitempty"`
	ToolCalls        []ModelToolCall `json:"tool_calls,omitempty"`
	StopReason       string          `json:"stop_reason,omitempty"`
	// Thinking, ThinkingOmitted and State are how servers before
	// Reasoning wrote the same record (Anthropic's blocks; OpenAI's);
	// stored events keep them, and the agent still reads them.
	Thinking        json.RawMessage `json:"thinking,omitempty"`
	ThinkingOmitted bool            `json:"thinking_omitted,omitempty"`
	State           json.RawMessage `json:"state,omitempty"`
}

// ModelToolCall is a tool call as the model turn holds it; each also has
// its own tool_call event.
type ModelToolCall struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ToolCallEvent is the data of an EventToolCall event.
type ToolCallEvent struct {
	Step  int             `json:"step"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ObservationEvent is the data of an EventObservation event: what a tool
// call returned, as the model read it.
type ObservationEvent struct {
	Step    int    `json:"step"`
	ID      string `json:"id"`
	Name    string `json:"name"`
	Output  string `json:"output"`
	IsError bool   `json:"is_error,omitempty"`
	// Images are files in the workspace (screenshots), never inline data.
	Images []ImageRef `json:"images,omitempty"`
	// OutputPath is the workspace file that holds the whole output when
	// Output was truncated.
	OutputPath string `json:"output_path,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	// Summary is set on the observation of a successful finish call.
	Summary string `json:"summary,omitempty"`
	// Interrupted marks a call that an orchestrator restart cut short; its
	// effect is unknown.
	Interrupted bool `json:"interrupted,omitempty"`
}

// ImageRef is an image saved in the workspace.
type ImageRef struct {
	Path      string `json:"path"` // relative to the workspace
	MediaType string `json:"media_type"`
	Width     int    `json:"width,omitempty"`
	Height    int    `json:"height,omitempty"`
}

// UsageEvent is the data of an EventUsage event: the tokens and cost of
// one model call.
type UsageEvent struct {
	Usage
	Step  int    `json:"step,omitempty"`
	Model string `json:"model,omitempty"`
	// CostKnown is false when the model has no known price; its cost is
	// then counted as 0.
	CostKnown bool `json:"cost_known"`
	// Kind is "condensation" for a summary request of the context
	// manager, empty for a step.
	Kind string `json:"kind,omitempty"`
	// PromptCounted is the request's size as counted before it was sent
	// (uncalibrated) and PromptEstimate as calibrated; with the reported
	// input they calibrate the counts of a resumed run.
	PromptCounted  int `json:"prompt_counted,omitempty"`
	PromptEstimate int `json:"prompt_estimate,omitempty"`
	// ContextBudget is the budget the prompt was held to.
	ContextBudget int `json:"context_budget,omitempty"`
	// ReasoningTokens are the part of OutputTokens the model spent
	// thinking, where the provider reports it.
	ReasoningTokens int64 `json:"reasoning_tokens,omitempty"`
}

// ErrorEvent is the data of an EventError event: a failure the agent saw.
type ErrorEvent struct {
	Message string `json:"message"`
}

// CondensationEvent is the data of an EventCondensation event: a summary
// that replaced older steps in the prompt (the steps stay in the log).
type CondensationEvent struct {
	Kind    string `json:"kind"`
	Summary string `json:"summary"`
	// FromStep and ThroughStep bound the steps summarized.
	FromStep    int `json:"from_step"`
	ThroughStep int `json:"through_step"`
	// Depth is how many condensations the summary builds on: 0 for the
	// first, n+1 for a summary of summary n and further steps.
	Depth int `json:"depth"`
	// Truncated: the summary was cut to its limit.
	Truncated    bool `json:"truncated,omitempty"`
	TokensBefore int  `json:"tokens_before"`
	TokensAfter  int  `json:"tokens_after"`
	Budget       int  `json:"budget"`
	// Usage is what the summary request cost (none for a reset).
	Usage TokenUsage `json:"usage"`
	Model string     `json:"model,omitempty"`
	// Error says why the model gave no summary (kind digest).
	Error string `json:"error,omitempty"`
}

// TokenUsage is a model call's tokens as the provider reported them.
type TokenUsage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  int64 `json:"reasoning_tokens,omitempty"`
}

// ArtifactEvent is the data of an EventArtifact event: the workspace was
// archived.
type ArtifactEvent struct {
	Size   int64  `json:"size"`             // bytes of the archive
	Format string `json:"format,omitempty"` // "tar.gz"
}

// SummaryEvent is the data of an EventSummary event: the agent's final
// report.
type SummaryEvent struct {
	Summary string `json:"summary"`
}

// TaskEvent is the data of an EventTask event: the task an earlier job of
// a chain of follow-ups was given and how it ended.
type TaskEvent struct {
	Text   string    `json:"text"`
	Status JobStatus `json:"status"`
	Error  string    `json:"error,omitempty"`
}

// EventHiddenMessage is the whole data of an event whose encoding a secret
// value broke (it spanned the JSON's own syntax), of any kind:
// {"message": EventHiddenMessage}.
const EventHiddenMessage = "event hidden: it contained a secret value"

// EventDataTypes maps each kind of event to the type of its data. Every
// EventType constant is in it (a test checks), and so is every kind's
// component in /openapi.json.
var EventDataTypes = map[EventType]reflect.Type{
	EventStatus:       reflect.TypeFor[StatusEvent](),
	EventLog:          reflect.TypeFor[LogEvent](),
	EventModel:        reflect.TypeFor[ModelEvent](),
	EventToolCall:     reflect.TypeFor[ToolCallEvent](),
	EventObservation:  reflect.TypeFor[ObservationEvent](),
	EventUsage:        reflect.TypeFor[UsageEvent](),
	EventError:        reflect.TypeFor[ErrorEvent](),
	EventCondensation: reflect.TypeFor[CondensationEvent](),
	EventArtifact:     reflect.TypeFor[ArtifactEvent](),
	EventSummary:      reflect.TypeFor[SummaryEvent](),
	EventTask:         reflect.TypeFor[TaskEvent](),
	EventUserMessage:  reflect.TypeFor[UserMessage](),
	EventPaused:       reflect.TypeFor[PauseEvent](),
	EventResumed:      reflect.TypeFor[PauseEvent](),
}

// DecodeEventData decodes data into a new value of typ's data type and
// returns a pointer to it (*LogEvent for a log event, ...). Fields the type
// does not know are ignored, so that an older reader reads a newer log; an
// unknown kind is an EINVALID error.
func DecodeEventData(typ EventType, data []byte) (any, error) {
	t, ok := EventDataTypes[typ]
	if !ok {
		return nil, Errorf(EINVALID, "unknown event type %q", typ)
	}
	v := reflect.New(t).Interface()
	if err := json.Unmarshal(data, v); err != nil {
		return nil, Errorf(EINVALID, "%s event data: %v", typ, err)
	}
	return v, nil
}

// CheckEventData reports whether data is exactly typ's data: a JSON object
// holding only its type's fields, each of its type (or the data of a hidden
// event). Writers' tests call it on what they append; the stores do not, so
// a field added without its type costs a failing test, never a job's log.
func CheckEventData(typ EventType, data []byte) error {
	t, ok := EventDataTypes[typ]
	if !ok {
		return fmt.Errorf("unknown event type %q", typ)
	}
	var hidden struct {
		Message string `json:"message"`
	}
	if strictJSON(data, &hidden) == nil && hidden.Message == EventHiddenMessage {
		return nil
	}
	if err := strictJSON(data, reflect.New(t).Interface()); err != nil {
		return fmt.Errorf("%s event data does not fit drydock.%s: %w", typ, t.Name(), err)
	}
	return nil
}

func strictJSON(data []byte, v any) error {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("not a JSON object: %.40s", data)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the JSON object")
	}
	return nil
}
