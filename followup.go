package drydock

// Limits of follow-ups: jobs that continue a finished one.
const (
	// MaxFollowUpDepth is the most jobs one chain of follow-ups holds,
	// the root included: the runner loads every ancestor's conversation
	// to start a follow-up, so the chain is bounded where it is made.
	MaxFollowUpDepth = 32
	// MaxFollowUpsListed is the most follow-up ids Store.FollowUps
	// returns for one job.
	MaxFollowUpsListed = 1000
)

// PriorKinds are the kinds of an ancestor's events that AgentRun.Prior
// carries: those a prompt is built from (model turns, observations,
// notices and the context manager's records, condensations, people's
// messages), so the rest of a long log is not loaded.
var PriorKinds = []EventType{EventModel, EventObservation, EventLog, EventCondensation, EventUserMessage}
