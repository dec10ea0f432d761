package bench

import (
	"fmt"
	"slices"
)

// Target is a figure the issue asks for: a statistic of one result compared
// with a limit.
type Target struct {
	Measure string // the measure (see Measures) that produces the result
	Text    string // what the target says, for people
	Name    string // the result's name, profile and mode
	Profile string
	Mode    string
	Stat    string // p50, p95, p99, max (of a distribution) or value
	AtMost  bool   // the figure must be ≤ Limit; otherwise ≥
	Limit   float64
	// Timing targets depend on the machine's load, which a miss reports;
	// others report the result's note.
	Timing bool
	// PerEngine checks the result of each engine measured; otherwise the
	// result without an engine.
	PerEngine bool
}

// TargetStatus is one target checked against one engine's result.
type TargetStatus struct {
	Target   string   `json:"target"`
	Engine   string   `json:"engine,omitempty"`
	Measured *float64 `json:"measured,omitempty"`
	Unit     string   `json:"unit,omitempty"`
	// Status is met, missed, or not measured; Reason says why it was
	// missed (the load at the time, the result's note) or not measured.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// Targets are the speed and memory targets the project holds itself to on
// a 2-core machine.
var Targets = []Target{
	{Measure: "schedule", Text: "/schedule → first tool call, warm pool, headless, p50 ≤ 100 ms", Name: "schedule.first_tool_call", Profile: "headless", Mode: "warm", Stat: "p50", AtMost: true, Limit: 100, Timing: true, PerEngine: true},
	{Measure: "schedule", Text: "/schedule → first tool call, cold, headless, p50 ≤ 1 s", Name: "schedule.first_tool_call", Profile: "headless", Mode: "cold", Stat: "p50", AtMost: true, Limit: 1000, Timing: true, PerEngine: true},
	{Measure: "schedule", Text: "/schedule → first tool call, cold, desktop, p50 ≤ 3 s", Name: "schedule.first_tool_call", Profile: "desktop", Mode: "cold", Stat: "p50", AtMost: true, Limit: 3000, Timing: true, PerEngine: true},
	{Measure: "tools", Text: "toolboxd round trip (`true` in a session), p50 ≤ 5 ms", Name: "tools.roundtrip", Mode: "toolboxd-session", Stat: "p50", AtMost: true, Limit: 5, Timing: true, PerEngine: true},
	{Measure: "tools", Text: "toolboxd ≥ 40× faster than `docker exec` (p50, same run)", Name: "tools.speedup", Stat: "value", Limit: 40, Timing: true, PerEngine: true},
	{Measure: "sandbox", Text: "first Python result ≤ 3 s after the sandbox is ready (desktop, p50)", Name: "sandbox.first_python", Profile: "desktop", Stat: "p50", AtMost: true, Limit: 3000, Timing: true, PerEngine: true},
	{Measure: "sandbox", Text: "first Python result ≤ 3 s after the sandbox is ready (headless, p50)", Name: "sandbox.first_python", Profile: "headless", Stat: "p50", AtMost: true, Limit: 3000, Timing: true, PerEngine: true},
	{Measure: "density", Text: "≥ 40 idle desktop sandboxes fit in 24 GiB", Name: "density.fit_24gib", Profile: "desktop", Stat: "value", Limit: 40, PerEngine: true},
	{Measure: "density", Text: "idle desktop sandbox ≤ 100 MiB each (largest)", Name: "density.memory", Profile: "desktop", Stat: "max", AtMost: true, Limit: 100, PerEngine: true},
	{Measure: "api", Text: "≥ 1,000 schedules/s with SQLite", Name: "api.schedule_throughput", Stat: "value", Limit: 1000},
}

// Check evaluates the targets of the measures run against a report's
// results. A target whose result is missing is "not measured", with the
// measure's failure when it failed.
func Check(r *Report, targets []Target, measures []string) []TargetStatus {
	engines := []string{""}
	if len(r.Machine.Engines) > 0 {
		engines = nil
		for _, e := range r.Machine.Engines {
			engines = append(engines, e.Name)
		}
	}
	var out []TargetStatus
	for _, t := range targets {
		if !slices.Contains(measures, t.Measure) {
			continue
		}
		list := []string{""}
		if t.PerEngine {
			list = engines
		}
		for _, eng := range list {
			out = append(out, checkOne(r, t, eng))
		}
	}
	return out
}

func checkOne(r *Report, t Target, engine string) TargetStatus {
	st := TargetStatus{Target: t.Text, Engine: engine}
	res, ok := r.Find(t.Name, engine, t.Profile, t.Mode)
	switch {
	case !ok:
		st.Status, st.Reason = "not measured", "no result"
		if f, failed := r.Find(t.Measure, engine, "", ""); failed && f.Error != "" {
			st.Reason = "the measure failed: " + f.Error
		}
		return st
	case res.Error != "":
		st.Status, st.Reason = "not measured", "the measure failed: "+res.Error
		return st
	case res.Unavailable != "":
		st.Status, st.Reason = "not measured", res.Unavailable
		return st
	}
	v, ok := stat(res, t.Stat)
	if !ok {
		st.Status, st.Reason = "not measured", fmt.Sprintf("the result has no %s", t.Stat)
		return st
	}
	st.Measured, st.Unit = &v, res.Unit
	met := v >= t.Limit
	if t.AtMost {
		met = v <= t.Limit
	}
	st.Status = "met"
	if !met {
		st.Status = "missed"
		st.Reason = res.Note
		if t.Timing {
			st.Reason = fmt.Sprintf("load average %.1f at the start, %.1f at the end of the run", r.Machine.LoadStart[0], r.Machine.LoadEnd[0])
		}
	}
	return st
}

func stat(res Result, name string) (float64, bool) {
	if name == "value" {
		if res.Value == nil {
			return 0, false
		}
		return *res.Value, true
	}
	if res.Dist == nil || res.Dist.N == 0 {
		return 0, false
	}
	switch name {
	case "p50":
		return res.Dist.P50, true
	case "p95":
		return res.Dist.P95, true
	case "p99":
		return res.Dist.P99, true
	case "max":
		return res.Dist.Max, true
	}
	return 0, false
}
