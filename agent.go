package drydock

import "context"

// Emitter appends events to a job's log on behalf of an agent.
type Emitter interface {
	Emit(ctx context.Context, typ EventType, data any) error
}

// AgentRun is everything an agent gets for one run of one job.
type AgentRun struct {
	Job     *Job
	Sandbox *Sandbox
	Events  Emitter
	// History is the job's event log so far; non-empty when the run resumes
	// after a restart, so the agent continues instead of starting over.
	History []*Event
	// Prior is the conversation of the job's ancestors when the job
	// follows up a finished one (Job.ParentJobID), oldest first: for each
	// ancestor an EventTask with its task, then its events of the kinds a
	// prompt is built from. The agent continues from them; their steps,
	// usage and outcome are not this job's. Empty for any other job.
	Prior []*Event
	// Progress records steps and usage; the runner persists it.
	Progress func(ctx context.Context, steps int, usage Usage) error
	// Inbox returns the job's EventUserMessage events with Seq > after, in
	// order; nil when the job takes no messages. The agent
	// asks before every model call and marks each message it delivers
	// (LogMessageDelivered), so a message reaches the model exactly once.
	Inbox func(ctx context.Context, after int64) ([]*Event, error)
	// Ask records the question an interactive job's agent waits on as the
	// job's waiting_for ("" clears it); nil when no one can be asked.
	Ask func(ctx context.Context, question string) error
	// Hold (pause.go) returns at once while the job is not
	// paused, and otherwise blocks until it is resumed or ctx ends. The
	// agent calls it before every model call and every tool call. It
	// returns what the pauses since its last call were (nil: none), for
	// the agent to tell its model. nil: the job is never paused.
	Hold func(ctx context.Context) (*PauseSummary, error)
}

// AgentOutcome is how an agent ended a run that did not fail.
type AgentOutcome struct {
	Summary string
}

// Agent works on a job inside its sandbox until it finishes, fails, or ctx
// ends (cancel or timeout). An error is the job's error message; it should be
// an *Error whose message is fit for the user.
type Agent interface {
	Run(ctx context.Context, run *AgentRun) (*AgentOutcome, error)
}
