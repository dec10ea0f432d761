package toolbox_test

import (
	"bytes"
	"sort"
	"testing"
	"time"

	"github.com/drydockhq/drydock/toolbox"
)

// BenchmarkExecRoundTrip measures `true` through the client over a unix
// socket, in a persistent session and as a one-shot process, and reports
// the median and 95th percentile of one call.
func BenchmarkExecRoundTrip(b *testing.B) {
	e := serve(b, nil)
	ctx := b.Context()
	if _, err := e.client.CreateSession(ctx, toolbox.SessionRequest{ID: "bench"}); err != nil {
		b.Fatal(err)
	}
	b.Run("session", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			res, err := e.client.Run(ctx, "bench", toolbox.RunRequest{Command: "true"})
			lat = append(lat, time.Since(start))
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("run: %+v %v", res, err)
			}
		}
		reportPercentiles(b, lat)
	})
	b.Run("exec", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		var out bytes.Buffer
		for b.Loop() {
			start := time.Now()
			res, err := e.client.Exec(ctx, toolbox.ExecRequest{Args: []string{"true"}}, &out, &out)
			lat = append(lat, time.Since(start))
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("exec: %+v %v", res, err)
			}
		}
		reportPercentiles(b, lat)
	})
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
}
