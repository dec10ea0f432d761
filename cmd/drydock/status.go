package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/drydockhq/drydock"
)

// StatusCmd shows one job.
type StatusCmd struct {
	ID   string `arg:"" help:"Job id."`
	JSON bool   `name:"json" help:"Print the job as JSON."`
}

func (c *StatusCmd) Run(g *Globals) error {
	ctx, _, stop := g.signalContext()
	defer stop()
	j, err := g.Client().Job(ctx, c.ID)
	if err != nil {
		return g.explain(err, c.ID)
	}
	if c.JSON {
		return writeJSON(g.out(), j)
	}
	return printStatus(g.out(), j, g.colorful(g.out()), time.Now())
}

// printStatus writes a job as aligned "Field: value" lines, leaving out what
// is empty.
func printStatus(w io.Writer, j *drydock.Job, color bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	// coloured takes a value made safe already; row takes the job's own
	// words, from the server.
	coloured := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	row := func(k, v string) { coloured(k, safe(v)) }
	when := func(t *time.Time) string {
		if t == nil || t.IsZero() {
			return ""
		}
		return fmt.Sprintf("%s (%s ago)", t.Local().Format("2006-01-02 15:04:05"), age(now, *t))
	}
	row("Job", j.ID)
	status := ansi(color, statusColor(j.Status), safe(string(j.Status)))
	if d := runTime(j, now); d > 0 {
		status += fmt.Sprintf(" (%s)", d)
	}
	coloured("Status", status)
	if j.WaitingFor != "" {
		coloured("Waiting for", fmt.Sprintf("%s  (answer with: drydock message %s TEXT)", safe(truncate(strings.ReplaceAll(j.WaitingFor, "\n", " "), 300)), cmdWord(j.ID)))
	}
	row("Paused", pausedLine(j, now))
	row("Task", truncate(firstLine(j.Task), 100))
	row("Model", j.Model)
	row("Profile", string(j.Profile))
	row("Isolation", j.Isolation)
	row("Repository", repoLine(j.Repo))
	row("Pushed", j.PushedCommit)
	row("Follows up", j.ParentJobID)
	row("Follow-ups", strings.Join(j.FollowUps, ", "))
	row("Created", when(&j.CreatedAt))
	row("Started", when(j.StartedAt))
	row("Finished", when(j.FinishedAt))
	row("Steps", fmt.Sprint(j.Steps))
	if u := j.Usage; u.InputTokens+u.OutputTokens > 0 || u.CostUSD > 0 {
		usage := fmt.Sprintf("%s in / %s out tokens", thousands(u.InputTokens), thousands(u.OutputTokens))
		if u.CostUSD > 0 {
			usage += ", " + cost(u.CostUSD)
		}
		row("Usage", usage)
	}
	if j.Error != "" {
		coloured("Error", ansi(color, red, safe(strings.ReplaceAll(j.Error, "\n", " "))))
	}
	row("Summary", truncate(firstLine(j.Summary), 200))
	var meta []string
	for _, k := range slices.Sorted(maps.Keys(j.Metadata)) {
		meta = append(meta, k+"="+j.Metadata[k])
	}
	row("Metadata", strings.Join(meta, ", "))
	row("Desktop", j.VNCURL)
	if u := downloadLink(j); u != "" {
		coloured("Download", fmt.Sprintf("drydock download %s  (%s)", cmdWord(j.ID), safe(u)))
	}
	return tw.Flush()
}

// pausedLine tells of a job's pause: who paused it or controls its
// desktop, since when; or, once resumed, how long it was paused in all.
func pausedLine(j *drydock.Job, now time.Time) string {
	if !j.Paused {
		if j.PausedSeconds > 0 {
			return fmt.Sprintf("no (paused %s in all)", time.Duration(j.PausedSeconds*float64(time.Second)).Round(time.Second))
		}
		return ""
	}
	var who []string
	if j.PausedBy != "" {
		who = append(who, "by "+j.PausedBy)
	}
	if j.ControlBy != "" {
		who = append(who, j.ControlBy+" has control of the desktop")
	}
	s := "yes"
	if len(who) > 0 {
		s += ", " + strings.Join(who, "; ")
	}
	if j.PausedAt != nil {
		s += fmt.Sprintf(" (for %s)", age(now, *j.PausedAt))
	}
	return s
}

// runTime is how long the job has run, or ran; 0 before it started.
func runTime(j *drydock.Job, now time.Time) time.Duration {
	if j.StartedAt == nil {
		return 0
	}
	end := now
	if j.FinishedAt != nil {
		end = *j.FinishedAt
	}
	return max(end.Sub(*j.StartedAt).Round(time.Second), 0)
}
