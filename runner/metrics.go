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
	}
	reg.MustRegister(m.Started, m.Finished, m.Duration)
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
