package agent

import (
	"context"
	"fmt"
	"slices"

	"github.com/drydockhq/drydock"
)

// hold waits while the job is paused (AgentRun.Hold) and keeps what the
// pause was for the next prompt. A pause between two tool calls of one turn
// is told after the turn's results, never between a call and its result.
func (r *run) hold(ctx context.Context) error {
	if r.ar.Hold == nil {
		return nil
	}
	p, err := r.ar.Hold(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("wait while the job is paused: %w", err)
	}
	if p != nil {
		r.held = mergePauses(r.held, p)
	}
	return nil
}

// gate holds before a model call and tells the model of the pauses since
// its last turn, with a fresh screenshot when a person used the desktop.
func (r *run) gate(ctx context.Context) error {
	if err := r.hold(ctx); err != nil {
		return err
	}
	p := r.held
	if p == nil {
		return nil
	}
	r.held = nil
	return r.notice(ctx, "info", p.Notice())
}

// mergePauses joins the pauses a run waited out before one prompt.
func mergePauses(a, b *drydock.PauseSummary) *drydock.PauseSummary {
	if a == nil {
		return b
	}
	m := *a
	if b.From.Before(m.From) {
		m.From = b.From
	}
	if b.To.After(m.To) {
		m.To = b.To
	}
	m.By = slices.Clone(m.By)
	for _, by := range b.By {
		if !slices.Contains(m.By, by) {
			m.By = append(m.By, by)
		}
	}
	m.Reasons = slices.Clone(m.Reasons)
	for _, x := range b.Reasons {
		if !slices.Contains(m.Reasons, x) {
			m.Reasons = append(m.Reasons, x)
		}
	}
	m.Desktop = m.Desktop || b.Desktop
	return &m
}
