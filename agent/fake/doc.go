// Package fake is a working, scripted drydock.Agent for tests and demos until
// (and beside) the LLM agent: it performs real tool calls against the job's
// sandbox through toolboxd (it writes files in the workspace), emits the same
// kinds of events the LLM agent does, reports progress, and resumes from the
// event log after a restart.
//
// Its behaviour is steered by directives in the task text:
//
//	[fake:steps=N]     number of steps (default 3)
//	[fake:delay=DUR]   pause before each step (default 300ms)
//	[fake:fail=TEXT]   fail after the steps with TEXT as the error
//	[fake:hang]        never finish (until cancelled or timed out)
package fake
