// Package transcript turns a job's event log into the conversation sent to
// the model. The log is the source of truth: the agent appends every model
// turn, tool call, observation and notice to it, and each prompt is a view
// of it, built the same way whether the run is fresh or resumed after a
// restart.
//
// It also defines the payloads of the events the agent writes (the data of
// drydock.EventModel, EventToolCall, EventObservation, notice-carrying
// EventLog events, EventCondensation and the context manager's EventLog
// notes), so that readers of the log (the UI, replay) decode the same
// shapes.
//
// Messages is the whole conversation. Window is the one the agent sends: a
// view within a token budget (llm/tokens), kept there by masking older
// tool outputs in chunks, and, when that is not enough, by asking the
// model to fold the oldest steps into a summary that sits after the task
// in the first message. Each of those decisions is an event of the log,
// read back by the Window, so that the prompt is a function of the log and
// changes at its start only when a condensation happens, which keeps the
// provider's prompt cache useful. A summary request continues the last
// prompt (same system prompt, tools and conversation prefix, then a turn
// asking for the summary, with the outputs masking hid, cut), so that the
// cache serves it too; the tools are offered but not to be called
// (llm.Request.NoToolCalls), and a reply that calls one anyway, or a span
// that does not fit that way, gets a prompt of its own. The conversation
// is only ever cut
// between a model turn with its results and the next, so a tool call is
// never separated from its result.
package transcript
