package transcript_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The cost of building one prompt late in a long run under a large
// budget (1M tokens: nothing is summarized, 1,000 steps stay live), the
// step's new events included.
func BenchmarkWindowPrompt1000Steps(b *testing.B) {
	j := newJob(b)
	w := j.window(1_000_000, 20)
	ctx := context.Background()
	out := strings.Repeat("ok  \tgithub.com/acme/pkg/sub\t0.012s\n", 30)
	for i := 1; i <= 1000; i++ {
		j.step(i, out)
		if _, err := w.Prompt(ctx); err != nil {
			b.Fatal(err)
		}
	}
	n := 1000
	var total time.Duration
	for b.Loop() {
		n++
		j.step(n, out)
		t0 := time.Now()
		if _, err := w.Prompt(ctx); err != nil {
			b.Fatal(err)
		}
		total += time.Since(t0)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(n-1000)/1000, "ms/prompt")
}
