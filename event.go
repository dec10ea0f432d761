package drydock

import (
	"encoding/json"
	"time"
)

// EventType names what an event records.
type EventType string

// The kinds of events. Each kind's data is the type EventDataTypes names
// (eventdata.go).
const (
	EventStatus       EventType = "status"       // StatusEvent: a lifecycle transition
	EventLog          EventType = "log"          // LogEvent: orchestrator notes about the job; notice: for the agent's model too
	EventModel        EventType = "model"        // ModelEvent: a model turn: text and tool calls
	EventToolCall     EventType = "tool_call"    // ToolCallEvent
	EventObservation  EventType = "observation"  // ObservationEvent: what a tool call returned
	EventUsage        EventType = "usage"        // UsageEvent: the usage of one model call
	EventError        EventType = "error"        // ErrorEvent: a failure the agent saw
	EventCondensation EventType = "condensation" // CondensationEvent: a summary that replaced older events in the prompt
	EventArtifact     EventType = "artifact"     // ArtifactEvent {"size", "format"}: the workspace was archived
	EventSummary      EventType = "summary"      // SummaryEvent: the agent's final report
)

// Kinds of EventLog events of messages to a job's agent.
const (
	// LogMessageDelivered (a LogEvent with kind, seq, step, message,
	// from, notice): the agent received the user_message numbered seq before the
	// model call of step; message is the text as the model reads it. The
	// prompt shows it where this event stands, never where the
	// user_message does, so a resumed run builds the same prompt.
	LogMessageDelivered = "message_delivered"
	// LogAskUser (kind, question, step, level, message): an interactive
	// job's agent asked the user a question and waits for a message.
	LogAskUser = "ask_user"
	// LogMessageUndelivered (kind, seq, level, message): the job
	// ended before its agent received the user_message numbered seq.
	LogMessageUndelivered = "message_undelivered"
)

// Follow-ups.
const (
	// EventTask (TaskEvent): the task a job of a chain
	// of follow-ups was given and how it ended. No log stores it: the
	// runner puts one before each ancestor's events in AgentRun.Prior, so
	// that the agent knows what each was asked and how it went.
	EventTask EventType = "task"
)

// Pause and take-over: PauseEvent is the data of both.
const (
	EventPaused  EventType = "paused"  // a person paused the job or took control of its desktop
	EventResumed EventType = "resumed" // a reason to pause ended (resume, release, expiry, pause-max)
)

// Event is one entry of a job's append-only log. Seq numbers events of one job
// from 1 without gaps; it is the SSE id used for resuming.
type Event struct {
	JobID string          `json:"job_id"`
	Seq   int64           `json:"seq"`
	Type  EventType       `json:"type"`
	Time  time.Time       `json:"time"`
	Data  json.RawMessage `json:"data"`
}

// NewEvent builds an event whose Data is v encoded as JSON. Values that fail
// to encode are a programming error, so the error is folded into the data
// rather than dropped.
func NewEvent(jobID string, typ EventType, v any) *Event {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"encode_error": err.Error()})
	}
	return &Event{JobID: jobID, Type: typ, Data: b}
}

// MaxEventDataBytes bounds one event so a runaway tool output cannot bloat the
// log; larger payloads are truncated by the agent and kept whole as files.
const MaxEventDataBytes = 1 << 20
