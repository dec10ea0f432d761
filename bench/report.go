package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"
)

// Result is one measured figure: a distribution of samples, or a single
// value, or the reason it could not be measured.
type Result struct {
	// Name says what was measured ("sandbox.ready", "tools.roundtrip", ...).
	Name    string `json:"name"`
	Engine  string `json:"engine,omitempty"`
	Profile string `json:"profile,omitempty"`
	// Mode tells variants of one measure apart (cold/warm, session/exec).
	Mode  string   `json:"mode,omitempty"`
	Unit  string   `json:"unit"`
	Dist  *Dist    `json:"dist,omitempty"`
	Value *float64 `json:"value,omitempty"`
	// Unavailable says why nothing was measured (a feature missing from this
	// build, a flag that turned it off); Error, that the measure failed.
	Unavailable string             `json:"unavailable,omitempty"`
	Error       string             `json:"error,omitempty"`
	Note        string             `json:"note,omitempty"`
	Extra       map[string]float64 `json:"extra,omitempty"`
}

// Key identifies a result's measure, engine, profile and mode.
func (r Result) Key() string {
	return strings.Join([]string{r.Name, r.Engine, r.Profile, r.Mode}, "/")
}

// Report is what a run of the suite produces.
type Report struct {
	Version  string         `json:"version"`
	Date     time.Time      `json:"date"`
	Command  string         `json:"command"`
	Machine  Machine        `json:"machine"`
	Duration string         `json:"duration,omitempty"`
	Results  []Result       `json:"results"`
	Targets  []TargetStatus `json:"targets,omitempty"`
	// Comparisons set runc and gVisor side by side (the isolation measure).
	Comparisons []Comparison `json:"comparisons,omitempty"`

	mu      sync.Mutex
	started time.Time
	log     io.Writer
}

// NewReport starts a report for command (as typed), describing this machine.
// Progress lines go to log (nil: nowhere).
func NewReport(version, command string, log io.Writer) *Report {
	if log == nil {
		log = io.Discard
	}
	now := time.Now()
	return &Report{Version: version, Date: now.UTC().Truncate(time.Second), Command: command, Machine: DescribeMachine(), started: now, log: log}
}

// Logf writes a progress line.
func (r *Report) Logf(format string, args ...any) {
	fmt.Fprintf(r.log, "bench: "+format+"\n", args...)
}

// Add records results and logs each.
func (r *Report) Add(res ...Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range res {
		r.Results = append(r.Results, x)
		fmt.Fprintf(r.log, "bench: %s\n", x.Line())
	}
}

// Fail records a measure that could not complete, so the report shows it
// instead of leaving it out.
func (r *Report) Fail(name, engine, profile string, err error) {
	r.Add(Result{Name: name, Engine: engine, Profile: profile, Error: err.Error()})
}

// Find returns the result with the given key parts.
func (r *Report) Find(name, engine, profile, mode string) (Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.Results {
		if x.Name == name && x.Engine == engine && x.Profile == profile && x.Mode == mode {
			return x, true
		}
	}
	return Result{}, false
}

// Finish notes the load at the end and evaluates the targets.
func (r *Report) Finish(targets []Target, measures []string) {
	r.Machine.LoadEnd = LoadAverage()
	r.Duration = time.Since(r.started).Round(time.Second).String()
	r.Targets = Check(r, targets, measures)
	r.mu.Lock()
	r.Comparisons = Compare(r.Results)
	r.mu.Unlock()
}

// WriteJSON writes the report to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Line is a result in one line of text.
func (x Result) Line() string {
	label := x.Name
	for _, p := range []string{x.Engine, x.Profile, x.Mode} {
		if p != "" {
			label += " " + p
		}
	}
	switch {
	case x.Error != "":
		return label + ": FAILED: " + x.Error
	case x.Unavailable != "":
		return label + ": not available: " + x.Unavailable
	case x.Dist != nil:
		return fmt.Sprintf("%s: n=%d p50 %s p95 %s p99 %s %s", label, x.Dist.N, num(x.Dist.P50), num(x.Dist.P95), num(x.Dist.P99), x.Unit)
	case x.Value != nil:
		return fmt.Sprintf("%s: %s %s", label, num(*x.Value), x.Unit)
	}
	return label + ": no figure"
}

// Markdown writes the results and target checks as tables.
func (r *Report) Markdown(w io.Writer) {
	fmt.Fprintf(w, "Machine: %s (load average at the end %.2f %.2f %.2f). Date %s, drydock %s, took %s.\n\n",
		r.Machine, r.Machine.LoadEnd[0], r.Machine.LoadEnd[1], r.Machine.LoadEnd[2], r.Date.Format("2006-01-02 15:04 MST"), r.Version, r.Duration)
	fmt.Fprintf(w, "```sh\n%s\n```\n\n", r.Command)
	fmt.Fprintln(w, "| measure | engine | profile | mode | n | p50 | p95 | p99 | unit |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, x := range r.Results {
		cells := []string{x.Name, x.Engine, x.Profile, x.Mode}
		switch {
		case x.Error != "":
			cells = append(cells, "failed: "+x.Error, "", "", "", "")
		case x.Unavailable != "":
			cells = append(cells, "not available: "+x.Unavailable, "", "", "", "")
		case x.Dist != nil:
			cells = append(cells, fmt.Sprint(x.Dist.N), num(x.Dist.P50), num(x.Dist.P95), num(x.Dist.P99), x.Unit)
		case x.Value != nil:
			cells = append(cells, "", "**"+num(*x.Value)+"**", "", "", x.Unit)
		default:
			cells = append(cells, "", "", "", "", "")
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	markdownComparisons(w, r.Comparisons)
	if len(r.Targets) == 0 {
		return
	}
	fmt.Fprintln(w, "\n| target | engine | measured | status |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, t := range r.Targets {
		m := "—"
		if t.Measured != nil {
			m = num(*t.Measured) + " " + t.Unit
		}
		status := t.Status
		if t.Reason != "" {
			status += ": " + t.Reason
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", t.Target, t.Engine, m, status)
	}
}

// num prints a figure with as many decimals as its size deserves.
func num(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return fmt.Sprintf("%.0f", v)
	case v >= 100 || v <= -100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10 || v <= -10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func ptr(v float64) *float64 { return &v }
