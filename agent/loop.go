package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/llm"
)

// loop runs steps until the model finishes, a budget or the stuck
// detector ends the run, or ctx ends.
func (r *run) loop(ctx context.Context) (*drydock.AgentOutcome, error) {
	for {
		if r.outcome != nil {
			return r.outcome, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := r.budget(ctx); err != nil {
			return nil, err
		}
		if err := r.step(ctx); err != nil {
			return nil, err
		}
	}
}

// budget fails the run once a budget is spent.
func (r *run) budget(ctx context.Context) error {
	cfg := r.a.cfg
	tokens := r.usage.InputTokens + r.usage.OutputTokens + r.usage.CacheReadTokens + r.usage.CacheWriteTokens
	switch {
	case r.own() >= r.maxSteps:
		return r.fail(ctx, drydock.Errorf(drydock.ETOOLARGE, "the agent used all of its %d steps without finishing the task (raise max_steps, or split the task)", r.maxSteps))
	case cfg.MaxTokens > 0 && tokens >= cfg.MaxTokens:
		return r.fail(ctx, drydock.Errorf(drydock.ETOOLARGE, "the agent used its token budget (%d of %d tokens) without finishing the task", tokens, cfg.MaxTokens))
	case cfg.MaxCostUSD > 0 && r.usage.CostUSD >= cfg.MaxCostUSD:
		return r.fail(ctx, drydock.Errorf(drydock.ETOOLARGE, "the agent used its cost budget ($%.2f of $%.2f) without finishing the task", r.usage.CostUSD, cfg.MaxCostUSD))
	}
	return nil
}

// step asks the model for a turn, runs its tool calls, and records it all.
func (r *run) step(ctx context.Context) error {
	// Held first: a message sent during a pause is delivered after it.
	if err := r.gate(ctx); err != nil {
		return err
	}
	if err := r.deliver(ctx); err != nil {
		return err
	}
	prompt, err := r.window.Prompt(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("build the prompt: %w", err)
	}
	req := &llm.Request{
		Model:     r.model,
		System:    r.system,
		Messages:  r.heldReasoning.restore(prompt.Messages),
		Tools:     r.tools.Defs(),
		MaxTokens: r.a.cfg.MaxOutputTokens,
	}
	resp, err := r.a.provider.Complete(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		msg := r.mask.String(drydock.ErrorMessage(err))
		code := drydock.ErrorCode(err)
		if code == drydock.EINTERNAL {
			code, msg = drydock.EUNAVAILABLE, "the model request failed: "+r.mask.String(err.Error())
		}
		return r.fail(ctx, &drydock.Error{Code: code, Message: msg})
	}
	r.meter.Observe(prompt.Counted, resp.Usage)
	r.steps++
	step := r.steps
	for i := range resp.ToolCalls {
		c := &resp.ToolCalls[i]
		// Some OpenAI-compatible servers send no ids, or reuse them; both
		// APIs need every id unique in the conversation.
		if c.ID == "" || r.ids[c.ID] {
			c.ID = fmt.Sprintf("call_%d_%d", step, i+1)
		}
		r.ids[c.ID] = true
	}
	turn := transcript.ModelTurn{Step: step, Model: resp.Model, Text: resp.Text, ToolCalls: resp.ToolCalls, StopReason: string(resp.StopReason)}
	r.keepReasoning(&turn, resp.Reasoning)
	if err := r.emit(ctx, drydock.EventModel, turn); err != nil {
		return err
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
	ue := usageEvent{Usage: u, Step: step, Model: r.model, CostKnown: known,
		PromptCounted: prompt.Counted, PromptEstimate: prompt.Estimate, ContextBudget: r.window.Budget(), ReasoningTokens: resp.Usage.ReasoningTokens}
	if err := r.emit(ctx, drydock.EventUsage, ue); err != nil {
		return err
	}

	var obs []transcript.Observation
	for _, call := range resp.ToolCalls {
		if err := r.hold(ctx); err != nil {
			return err
		}
		if err := r.emit(ctx, drydock.EventToolCall, transcript.ToolCall{Step: step, ID: call.ID, Name: call.Name, Input: call.Input}); err != nil {
			return err
		}
		res := r.tools.Run(ctx, call)
		if err := ctx.Err(); err != nil {
			// Cancelled or out of time: what the tool saw is no observation
			// of the model's; a resumed run answers the call as interrupted.
			return err
		}
		o := r.keep(ctx, step, call, res)
		if err := r.emit(ctx, drydock.EventObservation, o); err != nil {
			return err
		}
		obs = append(obs, o)
		if res.Finish && r.outcome == nil {
			// The summary becomes the job's summary and a summary event
			// outside the masked log: mask it here.
			r.outcome = &drydock.AgentOutcome{Summary: r.mask.String(res.Summary)}
		}
	}
	r.history.Read(r.events)
	if err := r.ar.Progress(ctx, r.own(), r.usage); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("report progress: %w", err)
	}
	r.log.Debug("step", "step", step, "calls", len(resp.ToolCalls), "stop", resp.StopReason, "input_tokens", u.InputTokens, "output_tokens", u.OutputTokens)
	if r.outcome != nil {
		return nil
	}

	if allFailed(obs) {
		if err := r.toolboxGone(ctx); err != nil {
			return r.fail(ctx, err)
		}
	}
	v := r.stuck.observe(turn, obs)
	if v.fail != "" {
		return r.fail(ctx, drydock.Errorf(drydock.EINVALID, "%s", v.fail))
	}
	var notes []string
	if resp.StopReason == llm.StopMaxTokens {
		notes = append(notes, fmt.Sprintf("Your last reply was cut off at the limit of %d output tokens, so any tool call in it may be incomplete. Keep replies shorter; write a large file in several steps (create, then insert or append with bash).", r.a.cfg.MaxOutputTokens))
	}
	if v.warn != "" {
		notes = append(notes, v.warn)
	}
	if left := r.maxSteps - r.own(); left > 0 && left <= 2 && r.maxSteps >= 5 {
		notes = append(notes, fmt.Sprintf("You have %d step(s) left before the step limit. Wrap up now: call finish with a summary of what is done and what is not.", left))
	}
	for _, n := range notes {
		if err := r.notice(ctx, "warn", n); err != nil {
			return err
		}
	}
	return nil
}

// toolboxGrace is how long a toolbox that failed every call of a step may
// take to answer a health check before the run ends.
const toolboxGrace = 10 * time.Second

// allFailed reports whether a step made calls and every one failed.
func allFailed(obs []transcript.Observation) bool {
	for _, o := range obs {
		if !o.IsError {
			return false
		}
	}
	return len(obs) > 0
}

// toolboxGone checks, after a step whose every call failed, that the
// sandbox's toolbox still answers. When toolboxd died or the sandbox was
// stopped, asking the model again would only feed it the same connection
// error, step after step and request after paid request, until the stuck
// detector gave up with a message that hides the cause.
func (r *run) toolboxGone(ctx context.Context) *drydock.Error {
	hctx, cancel := context.WithTimeout(ctx, toolboxGrace)
	defer cancel()
	for {
		err := r.box.Health(hctx)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		select {
		case <-hctx.Done():
			return drydock.Errorf(drydock.EUNAVAILABLE, "the sandbox's toolbox stopped answering (toolboxd exited or the sandbox was stopped): %s", drydock.ErrorMessage(err))
		case <-time.After(250 * time.Millisecond):
		}
	}
}
