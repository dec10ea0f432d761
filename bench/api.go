package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// APIOptions configures the API measure.
type APIOptions struct {
	// Targets are servers to measure, used round-robin; none starts a
	// private API-only server (SQLite in a temp dir) from Options.Bin.
	Targets     []string
	Token       string
	Duration    time.Duration
	Concurrency int
	Statuses    int
}

// API measures POST /schedule throughput with Concurrency clients for
// Duration (each 201 means the job is durably stored), then GET /status
// latency from one client and from Concurrency clients.
func (s *Suite) API(ctx context.Context) error {
	o := s.opts.API
	if o.Concurrency < 1 || o.Statuses < 1 || o.Duration <= 0 {
		return fmt.Errorf("api bench: concurrency, statuses and duration must be positive")
	}
	targets, token := o.Targets, o.Token
	note := "private API-only server, SQLite (WAL, synchronous=FULL) in a temp dir"
	if len(targets) == 0 {
		srv, err := startServer(ctx, s.opts.Bin, "--runtime", "local", "--agent", "fake", "--max-concurrent", "0")
		if err != nil {
			return err
		}
		defer srv.Stop()
		targets, token = []string{srv.URL}, ""
	} else {
		note = "servers " + strings.Join(targets, ", ")
	}
	var rr atomic.Int64
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.Concurrency * 2}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	req := func(method, path, body string) (int, []byte, time.Duration, error) {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		target := targets[int(rr.Add(1))%len(targets)]
		r, err := http.NewRequestWithContext(ctx, method, target+path, rd)
		if err != nil {
			return 0, nil, 0, err
		}
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		t0 := time.Now()
		resp, err := hc.Do(r)
		if err != nil {
			return 0, nil, 0, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, b, time.Since(t0), err
	}

	s.report.Logf("api: scheduling for %s with %d clients (%s)", o.Duration, o.Concurrency, note)
	var (
		mu      sync.Mutex
		lat     []time.Duration
		ids     []string
		errs    atomic.Int64
		wg      sync.WaitGroup
		started = time.Now()
		stopAt  = started.Add(o.Duration)
	)
	for w := range o.Concurrency {
		wg.Go(func() {
			var myLat []time.Duration
			var myIDs []string
			for i := 0; time.Now().Before(stopAt) && ctx.Err() == nil; i++ {
				code, b, d, err := req("POST", "/schedule", fmt.Sprintf(`{"task": "bench %d-%d [fake:steps=0]"}`, w, i))
				var r struct {
					JobID string `json:"job_id"`
				}
				if err != nil || code != http.StatusCreated || json.Unmarshal(b, &r) != nil {
					errs.Add(1)
					continue
				}
				myLat, myIDs = append(myLat, d), append(myIDs, r.JobID)
			}
			mu.Lock()
			lat, ids = append(lat, myLat...), append(ids, myIDs...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(started)
	if len(ids) == 0 {
		return fmt.Errorf("no schedule succeeded against %s (%d errors; is a token needed? --token)", strings.Join(targets, ","), errs.Load())
	}
	perSec := float64(len(lat)) / elapsed.Seconds()
	extra := map[string]float64{"requests": float64(len(lat)), "errors": float64(errs.Load()), "clients": float64(o.Concurrency)}
	s.report.Add(
		Result{Name: "api.schedule_throughput", Unit: "/s", Value: ptr(round(perSec)), Extra: extra, Note: note},
		Result{Name: "api.schedule", Unit: "ms", Dist: dist(lat), Note: fmt.Sprintf("POST /schedule latency, %d clients", o.Concurrency)},
	)

	// One client: what a single poller sees.
	var serial []time.Duration
	serialErrs := 0
	for i := range o.Statuses {
		code, _, d, err := req("GET", "/status/"+ids[i%len(ids)], "")
		if err != nil || code != http.StatusOK {
			serialErrs++
			continue
		}
		serial = append(serial, d)
	}
	var conc []time.Duration
	var next, concErrs atomic.Int64
	t0 := time.Now()
	for range o.Concurrency {
		wg.Go(func() {
			var my []time.Duration
			for {
				i := int(next.Add(1))
				if i > o.Statuses || ctx.Err() != nil {
					break
				}
				code, _, d, err := req("GET", "/status/"+ids[i%len(ids)], "")
				if err != nil || code != http.StatusOK {
					concErrs.Add(1)
					continue
				}
				my = append(my, d)
			}
			mu.Lock()
			conc = append(conc, my...)
			mu.Unlock()
		})
	}
	wg.Wait()
	concPerSec := float64(len(conc)) / time.Since(t0).Seconds()
	s.report.Add(
		Result{Name: "api.status", Mode: "1 client", Unit: "ms", Dist: dist(serial), Extra: map[string]float64{"errors": float64(serialErrs)}},
		Result{Name: "api.status", Mode: fmt.Sprintf("%d clients", o.Concurrency), Unit: "ms", Dist: dist(conc), Extra: map[string]float64{"errors": float64(concErrs.Load())}},
		Result{Name: "api.status_throughput", Mode: fmt.Sprintf("%d clients", o.Concurrency), Unit: "/s", Value: ptr(round(concPerSec))},
	)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}
