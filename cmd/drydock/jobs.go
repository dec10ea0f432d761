package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
)

// JobsCmd lists jobs, newest first.
type JobsCmd struct {
	Status []string `help:"Only jobs in these states (pending, running, complete, error, cancelled); comma-separated or repeated."`
	Limit  int      `short:"n" default:"20" help:"Jobs per page (1 to 500)."`
	Cursor string   `help:"Page to start at, as printed after a page that has more."`
	All    bool     `short:"a" help:"List every matching job, following the pages."`
	JSON   bool     `name:"json" help:"Print {\"jobs\": [...], \"next_cursor\": ...} as JSON."`
}

func (c *JobsCmd) Run(g *Globals) error {
	opts := client.ListOptions{Limit: c.Limit, Cursor: c.Cursor}
	for _, s := range c.Status {
		st := drydock.JobStatus(strings.TrimSpace(s))
		if !st.Valid() {
			return fmt.Errorf("unknown status %q: use pending, running, complete, error or cancelled", s)
		}
		opts.Status = append(opts.Status, st)
	}
	if c.Limit < 1 || c.Limit > 500 {
		return fmt.Errorf("--limit must be from 1 to 500")
	}
	ctx, _, stop := g.signalContext()
	defer stop()
	cl := g.Client()

	page := &client.JobPage{}
	if c.All {
		for j, err := range cl.AllJobs(ctx, opts) {
			if err != nil {
				return g.explain(err, "")
			}
			page.Jobs = append(page.Jobs, j)
		}
	} else {
		var err error
		if page, err = cl.Jobs(ctx, opts); err != nil {
			return g.explain(err, "")
		}
	}
	if page.Jobs == nil {
		page.Jobs = []*drydock.Job{}
	}
	out := g.out()
	if c.JSON {
		return writeJSON(out, page)
	}
	if len(page.Jobs) == 0 {
		fmt.Fprintln(g.errw(), "No jobs.")
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tAGE\tSTEPS\tCOST\tTASK")
	for _, j := range page.Jobs {
		status := safe(string(j.Status))
		if j.Paused {
			status += " (paused)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", safe(j.ID), status, age(now, j.CreatedAt), j.Steps, cost(j.Usage.CostUSD),
			safe(truncate(firstLine(j.Task), 60)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.NextCursor != "" {
		next := "drydock jobs"
		if len(c.Status) > 0 {
			next += " --status " + strings.Join(c.Status, ",")
		}
		if c.Limit != 20 {
			next += fmt.Sprintf(" --limit %d", c.Limit)
		}
		fmt.Fprintf(g.errw(), "More jobs: %s --cursor %s (or --all)\n", next, cmdWord(page.NextCursor))
	}
	return nil
}
