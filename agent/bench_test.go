package agent_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/drydockhq/drydock/bench"
	"github.com/drydockhq/drydock/runtime/local"
	"github.com/drydockhq/drydock/store/sqlite"
)

// The agent's own cost per step, persistence included, in a 200-step run:
// each step's wall time minus the model call and the tool call (a bash
// command in a local sandbox). Reported as p50 and p99 per step; the
// measurement is drydock bench agent's.
func BenchmarkStepOverhead(b *testing.B) {
	const steps = 200
	ctx := b.Context()
	dir := b.TempDir()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	rt, err := local.New(local.Options{Root: filepath.Join(dir, "rt"), ServerID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	var overheads []time.Duration
	for b.Loop() {
		o, err := bench.AgentStepOverhead(ctx, store, rt, steps)
		if err != nil {
			b.Fatal(err)
		}
		overheads = append(overheads, o...)
	}
	slices.Sort(overheads)
	b.ReportMetric(float64(overheads[len(overheads)/2].Microseconds())/1000, "ms/step-p50")
	b.ReportMetric(float64(overheads[len(overheads)*99/100].Microseconds())/1000, "ms/step-p99")
}
