package runner

import (
	"time"

	"github.com/drydockhq/drydock"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the runner's Prometheus instruments. A nil *Metrics records
// nothing, so tests need not build one.
type Metrics struct {
	Started  *prometheus.CounterVec
	Finished *prometheus.CounterVec
	Duration *prometheus.HistogramVec
	// SandboxStarts and SandboxAcquire count and time a job's getting a
	// ready sandbox, by profile and by start: "warm" (claimed from the
	// pool) or "cold" (created for the job).
	SandboxStarts  *prometheus.CounterVec
	SandboxAcquire *prometheus.HistogramVec
}

// NewMetrics registers the runner's instruments with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drydock_jobs_started_total", Help: "Jobs claimed by this server, by whether it resumed a job left by another process.",
		}, []string{"resumed"}),
		Finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drydock_jobs_finished_total", Help: "Jobs finished by this server, by final status.",
		}, []string{"status"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "drydock_job_duration_seconds", Help: "Wall time of a job run on this server, by final status.",
			Buckets: prometheus.ExponentialBuckets(0.1, 2.5, 14),
		}, []string{"status"}),
		SandboxStarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drydock_sandbox_starts_total", Help: "Sandboxes given to jobs by this server, by profile and start (warm: from the pool; cold: created for the job).",
		}, []string{"profile", "start"}),
		SandboxAcquire: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "drydock_sandbox_acquire_seconds", Help: "Time from asking for a job's sandbox to its toolboxd being ready, by profile and start.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"profile", "start"}),
	}
	reg.MustRegister(m.Started, m.Finished, m.Duration, m.SandboxStarts, m.SandboxAcquire)
	return m
}

func (m *Metrics) started(resumed bool) {
	if m == nil {
		return
	}
	v := "false"
	if resumed {
		v = "true"
	}
	m.Started.WithLabelValues(v).Inc()
}

func (m *Metrics) finished(s drydock.JobStatus, d time.Duration) {
	if m == nil {
		return
	}
	m.Finished.WithLabelValues(string(s)).Inc()
	m.Duration.WithLabelValues(string(s)).Observe(d.Seconds())
}

// Start labels of the sandbox metrics.
const (
	startWarm = "warm"
	startCold = "cold"
)

func (m *Metrics) sandboxAcquired(profile drydock.Profile, start string, d time.Duration) {
	if m == nil {
		return
	}
	m.SandboxStarts.WithLabelValues(string(profile), start).Inc()
	m.SandboxAcquire.WithLabelValues(string(profile), start).Observe(d.Seconds())
}
