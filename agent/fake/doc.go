// Package fake is a working, scripted drydock.Agent for demos and tests: it
// performs real tool calls against the job's sandbox with the LLM agent's
// own tools, emits the events the LLM agent does, reports progress, and
// resumes from the event log after a restart.
//
// By default it is a demo of the product: it reads the task ("Build me a todo
// app in React"), looks at the sandbox's tools in bash, writes a small
// project that matches the task's words, runs its tests there, shows it on
// the desktop of a desktop sandbox (a screenshot through the computer tool),
// and finishes with a summary of what passed. No model and no network.
//
// Directives in the task text steer it (docs/API.md, "The demo agent"):
//
//	[fake:steps=N]     write N notes instead of the demo (what most tests use)
//	[fake:delay=DUR]   pause before each step (default 300ms)
//	[fake:fail=TEXT]   fail after the steps with TEXT as the error
//	[fake:hang]        never finish (until cancelled or timed out)
package fake
