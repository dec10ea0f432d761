package bench

import (
	"math"
	"slices"
	"time"
)

// Dist summarizes a set of samples in milliseconds (or in the Result's
// unit for non-latency figures).
type Dist struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Durations summarizes latencies in milliseconds.
func Durations(d []time.Duration) Dist {
	v := make([]float64, len(d))
	for i, x := range d {
		v[i] = float64(x) / float64(time.Millisecond)
	}
	return Values(v)
}

// Values summarizes samples. Percentiles are nearest-rank: p of n samples
// is the smallest sample with at least p·n samples at or below it, so every
// reported figure was actually observed (with 2 samples, p95 is the larger).
func Values(v []float64) Dist {
	if len(v) == 0 {
		return Dist{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return Dist{
		N:    len(s),
		P50:  Percentile(s, 0.50),
		P95:  Percentile(s, 0.95),
		P99:  Percentile(s, 0.99),
		Min:  round(s[0]),
		Max:  round(s[len(s)-1]),
		Mean: round(sum / float64(len(s))),
	}
}

// Percentile is the nearest-rank p-quantile (0 < p ≤ 1) of sorted samples.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return round(sorted[max(0, min(i, len(sorted)-1))])
}

// round keeps three decimals: microseconds when the unit is milliseconds.
func round(x float64) float64 { return math.Round(x*1000) / 1000 }
