package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/transcript"
	"github.com/drydockhq/drydock/llm"
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
	n := transcript.Notice{Level: "info", Message: p.Notice(), Notice: true, Step: r.steps}
	if p.Desktop {
		r.freshScreen(ctx, &n)
	}
	return r.emit(ctx, drydock.EventLog, n)
}

// freshScreen adds a screenshot taken now to n: after a person used the
// desktop, the model's last picture of it may be wrong. It is taken as the
// computer tool takes one and kept as its images are; a sandbox without a
// desktop, or a screenshot that fails, leaves the notice in words only.
func (r *run) freshScreen(ctx context.Context, n *transcript.Notice) {
	if !slices.Contains(r.tools.Names(), "computer") {
		return
	}
	input, _ := json.Marshal(map[string]string{"action": "screenshot"})
	res := r.tools.Run(ctx, llm.ToolCall{ID: "resume", Name: "computer", Input: input})
	if res.IsError || len(res.Images) == 0 {
		r.log.Warn("screenshot after a take-over", "err", res.Output)
		n.Message += " (A screenshot of the desktop could not be taken: take one before you act on the screen.)"
		return
	}
	for i, img := range res.Images {
		ext := strings.TrimPrefix(img.MediaType, "image/")
		p := path.Join(screenshotsDir, fmt.Sprintf("step-%04d-after-takeover-%d.%s", r.steps, i+1, ext))
		if err := r.box.WriteFile(ctx, p, img.Data); err != nil {
			r.log.Warn("save the screenshot after a take-over", "path", p, "err", err)
			continue
		}
		r.imgs[p] = img.Image
		n.Images = append(n.Images, transcript.ImageRef{Path: p, MediaType: img.MediaType, Width: img.Width, Height: img.Height})
		if r.images {
			n.Message += " This is the desktop now:"
		} else {
			n.Message += fmt.Sprintf(" A screenshot of the desktop now is in %s.", p)
		}
	}
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
