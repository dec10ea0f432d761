package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
)

// maxEventText bounds one event's line: get_events is a page to skim, the
// whole of an output is in the workspace or the trajectory.
const maxEventText = 400

// formatJob is a job as a model reads it: labelled lines, the id first.
func formatJob(j *drydock.Job) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Job %s\nstatus: %s\n", j.ID, j.Status)
	if j.NoAgent() {
		fmt.Fprintf(&b, "agent: none (the sandbox is held for you: run_command, write_file)\n")
	}
	if j.Task != "" {
		fmt.Fprintf(&b, "task: %s\n", oneLine(j.Task, 500))
	}
	fmt.Fprintf(&b, "created: %s\n", j.CreatedAt.UTC().Format(time.RFC3339))
	if j.StartedAt != nil {
		fmt.Fprintf(&b, "started: %s\n", j.StartedAt.UTC().Format(time.RFC3339))
	}
	if j.FinishedAt != nil {
		fmt.Fprintf(&b, "finished: %s\n", j.FinishedAt.UTC().Format(time.RFC3339))
	}
	if !j.NoAgent() {
		fmt.Fprintf(&b, "steps: %d, tokens in/out: %d/%d, cost: $%.4f\n", j.Steps, j.Usage.InputTokens, j.Usage.OutputTokens, j.Usage.CostUSD)
	}
	if j.WaitingFor != "" {
		fmt.Fprintf(&b, "waiting for an answer (send_message): %s\n", oneLine(j.WaitingFor, 500))
	}
	if j.Paused {
		fmt.Fprintf(&b, "paused by: %s\n", j.PausedBy)
	}
	if j.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", oneLine(j.Error, 1000))
	}
	if j.Summary != "" {
		fmt.Fprintf(&b, "summary: %s\n", strings.TrimSpace(j.Summary))
	}
	if j.ParentJobID != "" {
		fmt.Fprintf(&b, "follows up: %s\n", j.ParentJobID)
	}
	if len(j.FollowUps) > 0 {
		fmt.Fprintf(&b, "follow-ups: %s\n", strings.Join(j.FollowUps, ", "))
	}
	if j.PushedCommit != "" {
		fmt.Fprintf(&b, "pushed commit: %s\n", j.PushedCommit)
	}
	if len(j.SecretNames) > 0 {
		fmt.Fprintf(&b, "secrets (names only): %s\n", strings.Join(j.SecretNames, ", "))
	}
	if j.DownloadURL != "" {
		fmt.Fprintf(&b, "workspace archive: %s\n", j.DownloadURL)
	}
	return strings.TrimRight(b.String(), "\n")
}

// jobTitle is a job's one-line description in lists.
func jobTitle(j *drydock.Job) string {
	if j.NoAgent() {
		return "[agent none] " + j.Task
	}
	return j.Task
}

// oneLine folds whitespace and cuts s to at most n bytes (on a rune
// boundary).
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// formatEvent is one event as one compact line: "#seq time type: what".
func formatEvent(e *drydock.Event) string {
	d, _ := drydock.DecodeEventData(e.Type, e.Data)
	var what string
	switch d := d.(type) {
	case *drydock.StatusEvent:
		what = string(d.Status)
		if d.Error != "" {
			what += ": " + d.Error
		}
	case *drydock.ModelEvent:
		what = d.Text
		var names []string
		for _, c := range d.ToolCalls {
			names = append(names, c.Name)
		}
		if len(names) > 0 {
			what = strings.TrimSpace(what + " → calls " + strings.Join(names, ", "))
		}
	case *drydock.ToolCallEvent:
		what = d.Name + " " + string(compactJSON(d.Input))
	case *drydock.ObservationEvent:
		what = d.Name
		if d.IsError {
			what += " (error)"
		}
		what += ": " + d.Output
	case *drydock.UsageEvent:
		what = fmt.Sprintf("in %d, out %d tokens", d.InputTokens, d.OutputTokens)
	case *drydock.SummaryEvent:
		what = d.Summary
	case *drydock.ArtifactEvent:
		what = fmt.Sprintf("workspace archived (%d bytes)", d.Size)
	case *drydock.UserMessage:
		what = d.Text
	case *drydock.LogEvent:
		what = d.Message
		if d.Kind != "" {
			what = d.Kind + ": " + what
		}
	case *drydock.ErrorEvent:
		what = d.Message
	case *drydock.CondensationEvent:
		what = fmt.Sprintf("steps %d to %d summarized: %s", d.FromStep, d.ThroughStep, d.Summary)
	}
	if what == "" {
		what = string(e.Data)
	}
	return fmt.Sprintf("#%d %s %s: %s", e.Seq, e.Time.UTC().Format("15:04:05"), e.Type, oneLine(what, maxEventText))
}

// formatListing is a directory, one entry a line.
func formatListing(id string, l *client.Listing) string {
	var b strings.Builder
	dir := l.Path
	if dir == "" {
		dir = "/"
	}
	fmt.Fprintf(&b, "Job %s, workspace %s (%s, %d entries):\n", id, dir, l.Source, len(l.Entries))
	for _, e := range l.Entries {
		switch e.Type {
		case "dir":
			fmt.Fprintf(&b, "%s/\n", e.Path)
		case "symlink":
			fmt.Fprintf(&b, "%s -> %s\n", e.Path, e.LinkTarget)
		default:
			fmt.Fprintf(&b, "%s  %d bytes\n", e.Path, e.Size)
		}
	}
	if l.Truncated {
		b.WriteString("[listing cut: list a subdirectory]\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// compactJSON is raw without insignificant space (a tool's input as the
// model wrote it may be indented).
func compactJSON(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}
