package main

import (
	"errors"
	"fmt"

	"github.com/drydockhq/drydock"
)

// CancelCmd cancels jobs.
type CancelCmd struct {
	IDs  []string `arg:"" name:"id" help:"Job ids."`
	JSON bool     `name:"json" help:"Print each job as returned by the server, one JSON line each."`
}

func (c *CancelCmd) Run(g *Globals) error {
	ctx, _, stop := g.signalContext()
	defer stop()
	cl := g.Client()
	out := g.out()
	var errs []error
	for _, id := range c.IDs {
		j, err := cl.Cancel(ctx, id)
		if err != nil {
			errs = append(errs, g.explain(err, id))
			continue
		}
		if c.JSON {
			if err := writeJSON(out, j); err != nil {
				return err
			}
			continue
		}
		switch {
		case j.Status == drydock.StatusCancelled:
			fmt.Fprintf(out, "Cancelled job %s.\n", safe(j.ID))
		case j.Status.Terminal():
			fmt.Fprintf(out, "Job %s had already ended (%s); nothing to cancel.\n", safe(j.ID), j.Status)
		default:
			fmt.Fprintf(out, "Cancelling job %s: it stops shortly (watch with: drydock logs %s -f).\n", safe(j.ID), cmdWord(j.ID))
		}
	}
	return errors.Join(errs...)
}
