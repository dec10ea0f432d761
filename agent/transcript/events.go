package transcript

import "github.com/drydockhq/drydock/llm"

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
type Condensation struct {
	Kind    string `json:"kind"`
	Summary string `json:"summary"`
	// FromStep and ThroughStep are the steps this event folded into the
	// summary; earlier ones were folded in by earlier condensations.
	FromStep    int `json:"from_step"`
	ThroughStep int `json:"through_step"`
	// Depth is how many condensations the summary builds on: 0 for the
	// first, n+1 for a summary of summary n and further steps.
	Depth int `json:"depth"`
	// Truncated says the summary was cut to fit its share of the prompt.
	Truncated bool `json:"truncated,omitempty"`
	// Prompt sizes (estimated tokens, as the provider counts them) before
	// and after, and the budget they are held to.
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
	Budget       int `json:"budget"`
	// Usage is what the summary request cost (none for a reset).
	Usage llm.Usage `json:"usage"`
	Model string    `json:"model,omitempty"`
	// Error says why the model gave no summary (KindDigest).
	Error string `json:"error,omitempty"`
}

// ContextNote is the data of the context manager's log events (KindMask,
// KindCut).
type ContextNote struct {
	Level   string `json:"level"`
	Message string `json:"message"`
	Kind    string `json:"kind"`
	// ThroughStep: the outputs of steps up to this one are masked
	// (KindMask).
	ThroughStep int `json:"through_step,omitempty"`
	// Step: the step whose results are cut (KindCut).
	Step         int `json:"step,omitempty"`
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
	Budget       int `json:"budget"`
}
