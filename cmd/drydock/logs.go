package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
)

// LogsCmd prints a job's event log, or follows it live.
type LogsCmd struct {
	ID     string `arg:"" help:"Job id."`
	Follow bool   `short:"f" help:"Keep printing new events until the job ends."`
	After  int64  `help:"Start after this event sequence number." default:"0"`
	JSON   bool   `name:"json" help:"Print each event as one JSON line."`
}

func (c *LogsCmd) Run(g *Globals) error {
	ctx, interrupted, stop := g.signalContext()
	defer stop()
	cl := g.Client()
	p := newEventPrinter(g, c.JSON)
	if c.Follow {
		j, err := follow(ctx, g, cl, c.ID, c.After, p, interrupted)
		if err != nil || j == nil {
			return err
		}
		if !c.JSON {
			p.final(j)
		}
		return nil
	}
	after := c.After
	for {
		page, err := cl.Events(ctx, c.ID, after, 1000)
		if err != nil {
			return g.explain(err, c.ID)
		}
		for _, e := range page.Events {
			if err := p.print(e); err != nil {
				return err
			}
		}
		if page.Done || len(page.Events) == 0 || page.NextAfter <= after {
			return nil
		}
		after = page.NextAfter
	}
}

// follow prints a job's events from after on as they happen and returns the
// job once it is terminal. On Ctrl-C it stops following, leaves the job
// running, says how to resume, and returns nil, nil.
func follow(ctx context.Context, g *Globals, cl *client.Client, id string, after int64, p *eventPrinter, interrupted func() bool) (*drydock.Job, error) {
	err := cl.StreamEvents(ctx, id, after, p.print)
	if err != nil {
		if interrupted() {
			resume := "drydock logs " + cmdWord(id) + " -f"
			if p.last > 0 {
				resume += fmt.Sprintf(" --after %d", p.last)
			}
			fmt.Fprintf(g.errw(), "\nStopped following; job %s keeps running. Resume with: %s\n", id, resume)
			return nil, nil
		}
		return nil, g.explain(err, id)
	}
	j, err := cl.Job(ctx, id)
	if err != nil {
		return nil, g.explain(err, id)
	}
	return j, nil
}

// eventPrinter renders events for a terminal, or as JSON lines.
type eventPrinter struct {
	w     io.Writer
	json  bool
	color bool
	last  int64 // seq of the last event printed
}

func newEventPrinter(g *Globals, asJSON bool) *eventPrinter {
	return &eventPrinter{w: g.out(), json: asJSON, color: g.colorful(g.out())}
}

// Limits of what one event shows on a terminal; `drydock logs --json` has
// everything.
const (
	previewRunes = 100
	outputLines  = 4
	outputRunes  = 160
)

func (p *eventPrinter) print(e *drydock.Event) error {
	if e.Seq > p.last {
		p.last = e.Seq
	}
	if p.json {
		return writeJSON(p.w, e)
	}
	// Data of a kind this CLI does not know, or that is not its kind's
	// shape, is shown raw below.
	d, _ := drydock.DecodeEventData(e.Type, e.Data)
	ts := ansi(p.color, dim, e.Time.Local().Format("15:04:05"))
	// line's text is made safe by its caller, before colouring.
	line := func(label, labelColor, text string) error {
		_, err := fmt.Fprintf(p.w, "%s %s %s\n", ts, ansi(p.color, labelColor, fmt.Sprintf("%-8s", safe(label))), text)
		return err
	}
	switch d := d.(type) {
	case *drydock.StatusEvent:
		text := ansi(p.color, statusColor(d.Status)+";"+bold, safe(string(d.Status)))
		if d.Error != "" {
			text += ": " + ansi(p.color, red, safe(firstLine(d.Error)))
		}
		return line("status", statusColor(d.Status), text)
	case *drydock.ModelEvent:
		if d.Text == "" {
			return nil // a turn with only tool calls: the tool_call events show them
		}
		return p.block("think", dim, ts, d.Text, false)
	case *drydock.ToolCallEvent:
		var input any
		_ = json.Unmarshal(d.Input, &input)
		args, _ := input.(map[string]any)
		return line("tool", cyan, ansi(p.color, bold, safe(d.Name))+" "+safe(toolPreview(d.Name, args, input)))
	case *drydock.ObservationEvent:
		out := d.Output
		if len(d.Images) > 0 {
			out = strings.TrimSpace(out + fmt.Sprintf("\n[%d image(s)]", len(d.Images)))
		}
		if d.IsError {
			return p.block("failed", red, ts, out, true)
		}
		return p.block("output", dim, ts, out, false)
	case *drydock.ErrorEvent:
		return line("error", red, ansi(p.color, red, safe(firstLine(d.Message))))
	case *drydock.UserMessage:
		text := d.Text
		if d.From != "" {
			text = "(from " + d.From + ") " + text
		}
		return p.block("message", yellow, ts, text, false)
	case *drydock.LogEvent:
		switch d.Kind {
		case drydock.LogMessageDelivered:
			// The text is the user_message's, shown there already.
			return line("log", dim, fmt.Sprintf("the agent received the message of event %d", d.Seq))
		case drydock.LogAskUser:
			return p.block("asks", yellow, ts, d.Question, false)
		}
		lc := dim
		if d.Level == "error" || d.Level == "warn" {
			lc = yellow
		}
		return line("log", lc, safe(truncate(firstLine(d.Message), outputRunes)))
	case *drydock.CondensationEvent:
		return line("memory", dim, "older steps were summarized to fit the model's context")
	case *drydock.ArtifactEvent:
		format := d.Format
		if format == "" {
			format = "archive"
		}
		return line("archive", green, fmt.Sprintf("workspace archived (%s, %s)", bytesize(d.Size), safe(format)))
	case *drydock.SummaryEvent:
		return p.block("summary", green, ts, d.Summary, false)
	case *drydock.UsageEvent:
		return nil // the final line sums it up
	}
	return line(string(e.Type), dim, safe(truncate(string(e.Data), previewRunes)))
}

// block prints up to outputLines lines of text, the first after the label
// and the rest indented under it.
func (p *eventPrinter) block(label, labelColor, ts, text string, isErr bool) error {
	lines := strings.Split(strings.TrimRight(strings.ReplaceAll(text, "\r\n", "\n"), "\n "), "\n")
	shown := lines[:min(len(lines), outputLines)]
	pad := strings.Repeat(" ", len("15:04:05")+1+8+1)
	for i, l := range shown {
		// Text, not Line: a tab in a tool's output is harmless, and ^I
		// in every line of a Makefile would not be.
		l = safeText(truncate(strings.TrimRight(l, " \t"), outputRunes))
		if isErr {
			l = ansi(p.color, red, l)
		}
		var err error
		if i == 0 {
			_, err = fmt.Fprintf(p.w, "%s %s %s\n", ts, ansi(p.color, labelColor, fmt.Sprintf("%-8s", label)), l)
		} else {
			_, err = fmt.Fprintf(p.w, "%s%s\n", pad, l)
		}
		if err != nil {
			return err
		}
	}
	if more := len(lines) - len(shown); more > 0 {
		_, err := fmt.Fprintf(p.w, "%s%s\n", pad, ansi(p.color, dim, fmt.Sprintf("… %d more lines", more)))
		return err
	}
	return nil
}

// toolPreview is a one-line gist of a tool call's arguments, by tool.
func toolPreview(name string, in map[string]any, raw any) string {
	s := func(k string) string {
		switch v := in[k].(type) {
		case string:
			return v
		case nil:
			return ""
		default:
			b, _ := json.Marshal(v)
			return string(b)
		}
	}
	var p string
	switch name {
	case "bash":
		p = "$ " + firstLine(s("command"))
		if in["restart"] == true {
			p = "(restart)"
		}
	case "str_replace_based_edit_tool":
		p = strings.TrimSpace(s("command") + " " + s("path"))
		if r := s("view_range"); r != "" {
			p += " " + r
		}
	case "computer":
		p = s("action")
		if c := s("coordinate"); c != "" {
			p += " " + c
		}
		if t := s("text"); t != "" {
			p += fmt.Sprintf(" %q", t)
		}
	case "execute_code":
		p = s("language") + ": " + firstLine(s("code"))
	case "recall":
		p = fmt.Sprintf("%q", s("query"))
	case "finish":
		p = firstLine(s("summary"))
	default:
		if raw != nil {
			b, _ := json.Marshal(raw)
			p = string(b)
		}
	}
	return truncate(p, previewRunes)
}

// final prints how a followed job ended: status, steps, usage and time, its
// error or summary, and how to get its workspace.
func (p *eventPrinter) final(j *drydock.Job) {
	w := p.w
	parts := []string{ansi(p.color, statusColor(j.Status)+";"+bold, safe(string(j.Status)))}
	if d := runTime(j, time.Now()); d > 0 {
		parts = append(parts, "in "+d.String())
	}
	parts = append(parts, fmt.Sprintf("%d steps", j.Steps))
	if t := j.Usage.InputTokens + j.Usage.OutputTokens; t > 0 {
		parts = append(parts, thousands(t)+" tokens")
	}
	if j.Usage.CostUSD > 0 {
		parts = append(parts, cost(j.Usage.CostUSD))
	}
	fmt.Fprintf(w, "\nJob %s %s\n", safe(j.ID), strings.Join(parts, " · "))
	if j.Error != "" {
		fmt.Fprintf(w, "Error:    %s\n", ansi(p.color, red, safeText(j.Error)))
	}
	if j.Summary != "" {
		fmt.Fprintf(w, "Summary:  %s\n", safe(truncate(strings.Join(strings.Fields(j.Summary), " "), 400)))
	}
	if u := downloadLink(j); u != "" {
		fmt.Fprintf(w, "Download: drydock download %s  (%s)\n", cmdWord(j.ID), safe(u))
	}
}
