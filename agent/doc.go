// Package agent is the LLM agent: a drydock.Agent whose loop runs in the
// orchestrator and drives a model (package llm) whose tools (package
// agent/tools) act in the job's sandbox through toolboxd.
//
// Each step asks the model for its next turn, runs the turn's tool calls in
// order and answers every one (a failing tool is an observation, not a
// failed job), and appends it all to the job's event log with secrets
// masked (values of secret-named variables of the server, the API key, the
// sandbox's token and VNC password, the job's own secrets, and
// credential-shaped text): the model turn, each tool call, each observation, the usage and
// cost of the step, then reports progress. The prompt is a view of that
// log under a token budget (agent/transcript's Window: the model's context
// window less the reply's room, or Config.ContextBudget, or the job's
// context_budget), kept there by cutting long outputs as they
// are recorded, masking old ones and having the model summarize the oldest
// steps, all recorded as events; recall searches the whole log and the
// saved outputs (agent/memory). A run that resumes after an orchestrator
// restart therefore sees the same conversation and continues where the log
// ends: finished steps are not redone, and a call that was cut short is
// answered as interrupted.
//
// A run ends when the model calls finish, or fails with a message for the
// user: no provider configured, the provider rejecting the key or failing
// after its retries, a budget spent (steps, tokens, cost; wall time is the
// context's), or the model stuck (the same action and result over and
// over, errors in a row, turns without tool calls), which it is warned
// about first.
//
// The package reads no environment; the server's composition root
// (cmd/drydock) picks the provider and its credentials and wires it as:
//
//	a, err := agent.New(agent.Config{Provider: "anthropic", Model: "claude-sonnet-4-5",
//		APIKey: key, Environ: os.Environ()}, logger)
//	// a.Check() reports a missing key at startup; jobs fail with the same message.
package agent
