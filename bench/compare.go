package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Comparison is one row of the isolation table: a statistic of one measure
// under runc and under gVisor on the same engine in the same run, and
// their ratio.
type Comparison struct {
	Measure string   `json:"measure"`
	Engine  string   `json:"engine"`
	Stat    string   `json:"stat"` // p50, p95 or value
	Unit    string   `json:"unit"`
	Runc    *float64 `json:"runc,omitempty"`
	GVisor  *float64 `json:"gvisor,omitempty"`
	// Ratio is gVisor's figure over runc's.
	Ratio *float64 `json:"ratio,omitempty"`
	// Missing says why a column has no figure.
	Missing string `json:"missing,omitempty"`
}

// Compare pairs the isolation measure's results of each engine: every
// distribution by its p50 and p95, every single figure by its value.
func Compare(results []Result) []Comparison {
	type key struct{ name, engine string }
	var order []key
	cols := map[key]map[string]Result{}
	for _, r := range results {
		if !strings.HasPrefix(r.Name, "isolation.") || !slices.Contains(Isolations, r.Mode) {
			continue
		}
		k := key{r.Name, r.Engine}
		if cols[k] == nil {
			cols[k] = map[string]Result{}
			order = append(order, k)
		}
		cols[k][r.Mode] = r
	}
	var out []Comparison
	for _, k := range order {
		runc, gv := cols[k][Isolations[0]], cols[k][Isolations[1]]
		unit := runc.Unit
		if unit == "" {
			unit = gv.Unit
		}
		stats := []string{"value"}
		if runc.Dist != nil || gv.Dist != nil {
			stats = []string{"p50", "p95"}
		}
		for _, st := range stats {
			c := Comparison{Measure: k.name, Engine: k.engine, Stat: st, Unit: unit}
			var why []string
			for _, col := range []struct {
				r    Result
				name string
				into **float64
			}{{runc, Isolations[0], &c.Runc}, {gv, Isolations[1], &c.GVisor}} {
				if v, ok := stat(col.r, st); ok {
					*col.into = ptr(v)
					continue
				}
				switch {
				case col.r.Unavailable != "":
					why = append(why, col.name+": "+col.r.Unavailable)
				case col.r.Error != "":
					why = append(why, col.name+" failed: "+col.r.Error)
				default:
					why = append(why, col.name+": not measured")
				}
			}
			if c.Runc != nil && c.GVisor != nil && *c.Runc > 0 {
				c.Ratio = ptr(round(*c.GVisor / *c.Runc))
			}
			c.Missing = strings.Join(why, "; ")
			out = append(out, c)
		}
	}
	return out
}

// markdownComparisons writes the isolation table, if there is one.
func markdownComparisons(w io.Writer, cs []Comparison) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintln(w, "\n| measure | engine | stat | runc | gVisor | gVisor / runc | unit |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	// A missing column's reason is long and the same on every row of an
	// engine: each is given once, under the table.
	var notes []string
	for _, c := range cs {
		cell := func(v *float64) string {
			if v == nil {
				return "—"
			}
			return num(*v)
		}
		ratio := cell(c.Ratio)
		if c.Ratio != nil {
			ratio += "×"
		}
		unit := c.Unit
		if c.Missing != "" {
			i := slices.Index(notes, c.Missing)
			if i < 0 {
				notes = append(notes, c.Missing)
				i = len(notes) - 1
			}
			unit += fmt.Sprintf(" [%d]", i+1)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", c.Measure, c.Engine, c.Stat, cell(c.Runc), cell(c.GVisor), ratio, unit)
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
	}
	for i, n := range notes {
		fmt.Fprintf(w, "[%d] %s\n", i+1, n)
	}
}
