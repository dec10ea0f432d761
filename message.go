package drydock

import (
	"strings"
	"unicode/utf8"
)

// EventUserMessage records a person's message to a job's agent; its data
// is a UserMessage. It is stored the moment the API accepts the message;
// the agent receives it as a user turn before its next model call.
const EventUserMessage EventType = "user_message"

// MaxMessageBytes bounds one message to an agent.
const MaxMessageBytes = 64 << 10

// MaxMessagesPerJob bounds the messages one job takes, so that a caller
// cannot grow a job's log (and the store) without end. Stores check it in
// the write that appends the message; concurrent appends may pass it by a
// few on Postgres.
const MaxMessagesPerJob = 500

// UserMessage is the data of an EventUserMessage event.
type UserMessage struct {
	Text string `json:"text"`
	// From names the token that sent it (its name, never its secret);
	// empty in development mode.
	From string `json:"from,omitempty"`
}

// ValidateMessageText checks the text of a message to an agent: 1 to
// MaxMessageBytes bytes of UTF-8 without NUL bytes, not blank. It returns
// an EINVALID or ETOOLARGE *Error naming the problem.
func ValidateMessageText(text string) error {
	if strings.TrimSpace(text) == "" {
		return Errorf(EINVALID, "text is required and must not be blank")
	}
	if len(text) > MaxMessageBytes {
		return Errorf(ETOOLARGE, "text is %d bytes; the limit is %d", len(text), MaxMessageBytes)
	}
	if !utf8.ValidString(text) || strings.ContainsRune(text, 0) {
		return Errorf(EINVALID, "text must be valid UTF-8 without NUL bytes")
	}
	return nil
}
