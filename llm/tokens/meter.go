package tokens

import (
	"math"
	"sync"

	"github.com/drydockhq/drydock/llm"
)

// Bounds of the calibration ratio: beyond them the provider's figures are
// taken to be about something else (a proxy that reports no usage, a
// server that counts the whole conversation it keeps) and are ignored.
const (
	minRatio = 0.25
	maxRatio = 4
)

// Meter counts requests for one run and calibrates its counts against the
// prompt sizes the provider reports. It is safe for concurrent use.
type Meter struct {
	Counter
	mu    sync.Mutex
	avg   float64 // moving average of reported/counted; 0 before any
	last  float64
	count int
}

// NewMeter returns a meter that counts with c, uncalibrated.
func NewMeter(c Counter) *Meter { return &Meter{Counter: c} }

// Request counts a request without calibration.
func (m *Meter) Request(req *llm.Request) int { return Request(m.Counter, req) }

// Observe records what the provider reported for a request counted as
// counted: the prompt's size is InputTokens plus the cached tokens.
func (m *Meter) Observe(counted int, u llm.Usage) {
	reported := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	if counted <= 0 || reported <= 0 {
		return
	}
	r := float64(reported) / float64(counted)
	if r < minRatio || r > maxRatio {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.count == 0 {
		m.avg = r
	} else {
		m.avg = 0.7*m.avg + 0.3*r
	}
	m.last = r
	m.count++
}

// Ratio is the factor counts are scaled by: the larger of the moving
// average and the latest observation, so that a request that counted short
// makes the next estimate cautious at once; 1 before any observation.
func (m *Meter) Ratio() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.count == 0 {
		return 1
	}
	return max(m.avg, m.last)
}

// Observations is how many replies calibrated the meter.
func (m *Meter) Observations() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count
}

// Scale turns a count into an estimate of what the provider will report.
func (m *Meter) Scale(counted int) int {
	return int(math.Ceil(float64(counted) * m.Ratio()))
}
