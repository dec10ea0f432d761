package transcript

import "github.com/drydockhq/drydock"

// Kinds of condensation events.
const (
	// KindSummary: the model summarized the steps (folding in the previous
	// summary).
	KindSummary = "summary"
	// KindDigest: the model could not summarize; the summary is the
	// previous one plus a list of the steps' calls.
	KindDigest = "digest"
	// KindReset: the prompt still did not fit; everything but the task,
	// the (cut) summary and the last step left it, without a model call.
	KindReset = "reset"
)

// Kinds of the context manager's log events (people read them; the model
// does not).
const (
	// KindMask: the outputs of older steps are hidden from the prompt.
	KindMask = "context_mask"
	// KindCut: one step's results are cut in the prompt to fit.
	KindCut = "context_cut"
)

// Condensation is the data of a drydock.EventCondensation event: a summary
// that replaces, in the prompt, every step up to ThroughStep. The steps
// stay in the log, where recall finds them.
type Condensation = drydock.CondensationEvent

// ContextNote is the data of the context manager's log events (KindMask:
// ThroughStep; KindCut: Step; both with TokensBefore, TokensAfter and
// Budget).
type ContextNote = drydock.LogEvent
