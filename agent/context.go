package agent

import (
	"context"
	"encoding/json"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/anthropic"
	"github.com/drydockhq/drydock/llm/tokens"
)

// contextBudget is the largest prompt of a job's requests: the job's
// context_budget, else the configured one, else the model's window less
// the reply's room; never past a known model's window. The job spec's
// bounds are checked again here because a job can reach the agent without
// the API (a store written by an older server, a test).
func (a *Agent) contextBudget(job *drydock.Job, model string) (int, error) {
	want := a.cfg.ContextBudget
	if n := job.ContextBudget; n != 0 {
		if n < drydock.MinContextBudget || n > drydock.MaxContextBudget {
			return 0, drydock.Errorf(drydock.EINVALID, "context_budget must be between %d and %d tokens, not %d", drydock.MinContextBudget, drydock.MaxContextBudget, n)
		}
		want = n
	}
	reply := a.cfg.MaxOutputTokens
	if a.Provider() == ProviderAnthropic {
		// Thinking comes on top of the reply, and the API refuses a prompt
		// that leaves the window no room for both.
		reply += anthropic.ThinkingBudget(model, a.cfg.ThinkingBudget)
	}
	return tokens.Budget(model, reply, want), nil
}

// calibrate replays the token counts and reported usage of the steps in
// the history, so that a resumed run counts as the first run had learnt to.
func (r *run) calibrate() {
	for _, e := range r.events {
		if e.Type != drydock.EventUsage {
			continue
		}
		var u usageEvent
		if json.Unmarshal(e.Data, &u) == nil && u.PromptCounted > 0 && u.Kind == "" {
			r.meter.Observe(u.PromptCounted, llm.Usage{InputTokens: u.InputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens})
		}
	}
}

// summarize asks the model for a summary of older steps (see
// agent/transcript) and accounts for it like a step's request, so that
// the job's token and cost budgets include it.
func (r *run) summarize(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	counted := r.meter.Request(req)
	resp, err := r.a.provider.Complete(ctx, req)
	if err != nil {
		r.log.Warn("summary request failed", "err", r.mask.String(err.Error()))
		return nil, err
	}
	cost, known := llm.Cost(r.model, resp.Usage)
	u := drydock.Usage{
		InputTokens:      resp.Usage.InputTokens,
		OutputTokens:     resp.Usage.OutputTokens,
		CacheReadTokens:  resp.Usage.CacheReadTokens,
		CacheWriteTokens: resp.Usage.CacheWriteTokens,
		CostUSD:          cost,
	}
	r.usage = r.usage.Add(u)
	ev := usageEvent{Usage: u, Step: r.steps, Model: r.model, CostKnown: known, Kind: "condensation",
		PromptCounted: counted, PromptEstimate: r.meter.Scale(counted), ContextBudget: r.window.Budget()}
	if err := r.emit(ctx, drydock.EventUsage, ev); err != nil {
		return nil, err
	}
	return resp, nil
}
