package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/drydockhq/drydock"
)

// PauseCmd pauses jobs.
type PauseCmd struct {
	IDs  []string `arg:"" name:"id" help:"Job ids."`
	JSON bool     `name:"json" help:"Print each job as returned by the server, one JSON line each."`
}

func (c *PauseCmd) Run(g *Globals) error {
	return pauseEach(g, c.IDs, c.JSON, true)
}

// ResumeCmd resumes paused jobs.
type ResumeCmd struct {
	IDs  []string `arg:"" name:"id" help:"Job ids."`
	JSON bool     `name:"json" help:"Print each job as returned by the server, one JSON line each."`
}

func (c *ResumeCmd) Run(g *Globals) error {
	return pauseEach(g, c.IDs, c.JSON, false)
}

func pauseEach(g *Globals, ids []string, asJSON, pause bool) error {
	ctx, _, stop := g.signalContext()
	defer stop()
	cl := g.Client()
	out := g.out()
	var errs []error
	for _, id := range ids {
		op := cl.Resume
		if pause {
			op = cl.Pause
		}
		j, err := op(ctx, id)
		if err != nil {
			errs = append(errs, g.explain(err, id))
			continue
		}
		if asJSON {
			if err := writeJSON(out, j); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintln(out, pauseLine(j, time.Now()))
	}
	return errors.Join(errs...)
}

// pauseLine says what state a pause or resume left the job in.
func pauseLine(j *drydock.Job, now time.Time) string {
	id := safe(j.ID)
	switch {
	case j.Paused && j.PausedBy != "":
		since := ""
		if j.PausedAt != nil {
			since = fmt.Sprintf(" since %s", j.PausedAt.Local().Format("15:04:05"))
		}
		return fmt.Sprintf("Job %s is paused (by %s%s): its agent waits before its next model or tool call. Resume with: drydock resume %s", id, safe(j.PausedBy), since, cmdWord(j.ID))
	case j.Paused:
		return fmt.Sprintf("Job %s stays paused: %s has control of its desktop.", id, safe(j.ControlBy))
	default:
		total := ""
		if j.PausedSeconds > 0 {
			total = fmt.Sprintf(" (paused %s in all)", (time.Duration(j.PausedSeconds * float64(time.Second))).Round(time.Second))
		}
		return fmt.Sprintf("Job %s is not paused%s: its agent goes on.", id, total)
	}
}
