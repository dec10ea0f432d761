// Package transcript turns a job's event log into the conversation sent to
// the model. The log is the source of truth: the agent appends every model
// turn, tool call, observation and notice to it, and builds each prompt
// from it with Messages, whether the run is fresh or resumed after a
// restart, so both see exactly the same conversation.
//
// It also defines the payloads of the events the agent writes (the data of
// drydock.EventModel, EventToolCall, EventObservation and notice-carrying
// EventLog events), so that readers of the log (the UI, replay, the
// context manager) decode the same shapes.
//
// Messages is deliberately the one place where the prompt is shaped: a
// token-budgeted view (masking old observations, summaries recorded as
// condensation events) replaces its body without touching the agent loop.
package transcript
