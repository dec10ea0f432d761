package eval

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/drydockhq/drydock/termtext"
)

// tailLines is how many lines of a failed check's output the table shows.
const tailLines = 8

// WriteTable prints the report for a terminal: a line per task, the totals,
// then why each failed attempt failed, with the tail of a failed check's
// output. Everything a model, a sandbox or the suite wrote is escaped
// (termtext), so that output cannot act on the terminal.
func (rep *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Suite %s, run %s", termtext.Line(rep.Suite), termtext.Line(rep.RunID))
	if rep.Model != "" {
		fmt.Fprintf(&b, ", model %s", termtext.Line(rep.Model))
	}
	fmt.Fprintf(&b, ", %d run(s) per task\n\n", rep.Runs)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tPASSED\tSTEPS\tTOKENS\tCOST\tWALL\tWHY")
	for _, ts := range rep.Tasks {
		var why []string
		for _, r := range ts.Attempts {
			if !r.Passed {
				why = append(why, fmt.Sprintf("#%d %s", r.Attempt, firstLine(r.Why(), 60)))
			}
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%d\t%s\t%s\t%s\t%s\n", termtext.Line(ts.ID), ts.Passed, ts.Runs, ts.Steps,
			tokens(ts.Usage.InputTokens+ts.Usage.OutputTokens), usd(ts.Usage.CostUSD), seconds(ts.WallSeconds), termtext.Line(strings.Join(why, "; ")))
	}
	t := rep.Total
	fmt.Fprintf(tw, "TOTAL\t%d/%d\t%d\t%s\t%s\t%s\t\n", t.Passed, t.Runs, t.Steps, tokens(t.Usage.InputTokens+t.Usage.OutputTokens), usd(t.Usage.CostUSD), seconds(t.WallSeconds))
	tw.Flush()
	fmt.Fprintf(&b, "\npass@1 %.1f%% (%d of %d runs passed", 100*t.PassAt1, t.Passed, t.Runs)
	if rep.Runs > 1 {
		fmt.Fprintf(&b, "; mean over %d runs per task), pass@%d %.1f%% (tasks with a passing run)\n", rep.Runs, rep.Runs, 100*t.PassAtN)
	} else {
		b.WriteString(")\n")
	}
	first := true
	for _, ts := range rep.Tasks {
		for _, r := range ts.Attempts {
			if r.Passed {
				continue
			}
			if first {
				b.WriteString("\nFailures:\n")
				first = false
			}
			fmt.Fprintf(&b, "- %s #%d (job %s): %s\n", termtext.Line(r.Task), r.Attempt, termtext.Line(r.JobID), termtext.Line(r.Why()))
			if r.Check != nil && r.Check.Output != "" && r.Reason == ReasonCheckFailed {
				lines := strings.Split(strings.TrimRight(r.Check.Output, "\n"), "\n")
				for _, l := range lines[max(0, len(lines)-tailLines):] {
					fmt.Fprintf(&b, "    | %s\n", termtext.Line(l))
				}
			}
		}
	}
	if rep.UIURL != "" {
		fmt.Fprintf(&b, "\nWeb UI: %s\n", termtext.Line(rep.UIURL))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

func tokens(n int64) string {
	switch {
	case n == 0:
		return "-"
	case n < 10_000:
		return fmt.Sprint(n)
	case n < 10_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}

func usd(c float64) string {
	if c == 0 {
		return "-"
	}
	if c < 0.01 {
		return fmt.Sprintf("$%.4f", c)
	}
	return fmt.Sprintf("$%.2f", c)
}

func seconds(s float64) string {
	if s < 60 {
		return fmt.Sprintf("%.0fs", s)
	}
	return fmt.Sprintf("%dm%02ds", int(s)/60, int(s)%60)
}
