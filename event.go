package drydock

import (
	"encoding/json"
	"time"
)

// EventType names what an event records.
type EventType string

const (
	EventStatus       EventType = "status"       // {"status", "error"?}: a lifecycle transition
	EventLog          EventType = "log"          // {"level", "message", "notice"?}: orchestrator notes about the job; notice: for the agent's model too
	EventModel        EventType = "model"        // a model turn: text and tool calls
	EventToolCall     EventType = "tool_call"    // {"id", "name", "input"}
	EventObservation  EventType = "observation"  // {"id", "name", "output", "is_error", "images"?}
	EventUsage        EventType = "usage"        // Usage of one step
	EventError        EventType = "error"        // {"message"}: a failure the agent saw
	EventCondensation EventType = "condensation" // a summary that replaced older events in the prompt
	EventArtifact     EventType = "artifact"     // {"size", "files"}: the workspace was archived
	EventSummary      EventType = "summary"      // {"summary"}: the agent's final report
)

// Kinds of EventLog events of messages to a job's agent (issue 16 §1, msg).
const (
	// LogMessageDelivered: {"kind", "seq", "step", "message", "notice":
	// true}: the agent received the user_message numbered seq before the
	// model call of step; message is the text as the model reads it. The
	// prompt shows it where this event stands, never where the
	// user_message does, so a resumed run builds the same prompt.
	LogMessageDelivered = "message_delivered"
	// LogAskUser: {"kind", "question", "level", "message"}: an interactive
	// job's agent asked the user a question and waits for a message.
	LogAskUser = "ask_user"
	// LogMessageUndelivered: {"kind", "seq", "level", "message"}: the job
	// ended before its agent received the user_message numbered seq.
	LogMessageUndelivered = "message_undelivered"
)

// Follow-ups (issue 16, part "follow").
const (
	// EventTask is {"text", "status", "error"}: the task a job of a chain
	// of follow-ups was given and how it ended. No log stores it: the
	// runner puts one before each ancestor's events in AgentRun.Prior, so
	// that the agent knows what each was asked and how it went.
	EventTask EventType = "task"
)

// Pause (issue 16 §2): PauseEvent is the data of both.
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
