package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// BenchCmd groups benchmarks.
type BenchCmd struct {
	API BenchAPICmd `cmd:"" name:"api" help:"Schedule throughput and status latency of a server's HTTP API."`
}

// BenchAPICmd measures POST /schedule throughput and GET /status latency.
type BenchAPICmd struct {
	Target      []string      `help:"URL of a server to measure (with the global --token if it needs one); repeat it for replicas, which clients use round-robin. None starts a private server (SQLite in a temp dir, API only)."`
	Duration    time.Duration `default:"10s" help:"How long to schedule jobs."`
	Concurrency int           `default:"32" help:"Concurrent clients."`
	Statuses    int           `default:"20000" help:"GET /status requests to time."`
	JSON        string        `help:"Also write the results as JSON to this file." type:"path"`
}

// BenchResult is what bench api reports.
type BenchResult struct {
	Date        time.Time `json:"date"`
	Machine     string    `json:"machine"`
	URL         string    `json:"url"`
	Concurrency int       `json:"concurrency"`
	Schedule    struct {
		Requests  int     `json:"requests"`
		Errors    int     `json:"errors"`
		PerSecond float64 `json:"per_second"`
		Latency   Pcts    `json:"latency_ms"`
	} `json:"schedule"`
	Status struct {
		Requests          int     `json:"requests"`
		Errors            int     `json:"errors"`
		SerialLatency     Pcts    `json:"serial_latency_ms"`
		ConcurrentPerSec  float64 `json:"concurrent_per_second"`
		ConcurrentLatency Pcts    `json:"concurrent_latency_ms"`
	} `json:"status"`
}

// Pcts are latency percentiles in milliseconds.
type Pcts struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

func percentiles(d []time.Duration) Pcts {
	if len(d) == 0 {
		return Pcts{}
	}
	slices.Sort(d)
	at := func(p float64) float64 {
		i := int(p * float64(len(d)-1))
		return float64(d[i].Microseconds()) / 1000
	}
	return Pcts{P50: at(0.50), P95: at(0.95), P99: at(0.99)}
}

func machine() string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb)
		mem = fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
	}
	return fmt.Sprintf("%d CPUs (%s), %s, %s/%s", runtime.NumCPU(), model, mem, runtime.GOOS, runtime.GOARCH)
}

func (c *BenchAPICmd) Run(g *Globals) error {
	ctx := context.Background()
	targets, token := c.Target, g.Token
	if len(targets) == 0 {
		url, stop, err := startPrivateServer()
		if err != nil {
			return err
		}
		defer stop()
		targets, token = []string{url}, ""
	}
	var rr atomic.Int64
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.Concurrency * 2}, Timeout: 30 * time.Second}
	req := func(method, path, body string) (int, []byte, time.Duration, error) {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		target := targets[int(rr.Add(1))%len(targets)]
		r, _ := http.NewRequestWithContext(ctx, method, target+path, rd)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
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

	var res BenchResult
	res.Date, res.Machine, res.URL, res.Concurrency = time.Now().UTC(), machine(), strings.Join(targets, ","), c.Concurrency
	fmt.Fprintf(g.Err, "scheduling for %s with %d clients against %s\n", c.Duration, c.Concurrency, res.URL)
	var (
		mu      sync.Mutex
		lat     []time.Duration
		ids     []string
		errs    atomic.Int64
		wg      sync.WaitGroup
		stopAt  = time.Now().Add(c.Duration)
		started = time.Now()
	)
	for w := range c.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var myLat []time.Duration
			var myIDs []string
			for i := 0; time.Now().Before(stopAt); i++ {
				code, b, d, err := req("POST", "/schedule", fmt.Sprintf(`{"task": "bench %d-%d [fake:steps=0]"}`, w, i))
				if err != nil || code != http.StatusCreated {
					errs.Add(1)
					continue
				}
				var r struct {
					JobID string `json:"job_id"`
				}
				json.Unmarshal(b, &r)
				myLat = append(myLat, d)
				myIDs = append(myIDs, r.JobID)
			}
			mu.Lock()
			lat, ids = append(lat, myLat...), append(ids, myIDs...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(started)
	res.Schedule.Requests, res.Schedule.Errors = len(lat), int(errs.Load())
	res.Schedule.PerSecond = float64(len(lat)) / elapsed.Seconds()
	res.Schedule.Latency = percentiles(lat)
	if len(ids) == 0 {
		return fmt.Errorf("no schedule succeeded against %s (is a token needed? --token)", res.URL)
	}

	// Status latency, one client: what a single poller sees.
	var serial []time.Duration
	statusErrs := 0
	for i := range c.Statuses {
		code, _, d, err := req("GET", "/status/"+ids[i%len(ids)], "")
		if err != nil || code != 200 {
			statusErrs++
			continue
		}
		serial = append(serial, d)
	}
	res.Status.SerialLatency = percentiles(serial)
	// Status under concurrency.
	var conc []time.Duration
	var next atomic.Int64
	t0 := time.Now()
	for range c.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var my []time.Duration
			for {
				i := int(next.Add(1))
				if i > c.Statuses {
					break
				}
				code, _, d, err := req("GET", "/status/"+ids[i%len(ids)], "")
				if err != nil || code != 200 {
					continue
				}
				my = append(my, d)
			}
			mu.Lock()
			conc = append(conc, my...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.Status.Requests, res.Status.Errors = len(serial)+len(conc), statusErrs+c.Statuses-len(conc)
	res.Status.ConcurrentPerSec = float64(len(conc)) / time.Since(t0).Seconds()
	res.Status.ConcurrentLatency = percentiles(conc)

	fmt.Fprintf(g.Out, "machine: %s\n", res.Machine)
	fmt.Fprintf(g.Out, "POST /schedule: %d ok, %d errors, %.0f/s (%d clients); latency ms p50 %.2f p95 %.2f p99 %.2f\n",
		res.Schedule.Requests, res.Schedule.Errors, res.Schedule.PerSecond, c.Concurrency, res.Schedule.Latency.P50, res.Schedule.Latency.P95, res.Schedule.Latency.P99)
	fmt.Fprintf(g.Out, "GET /status, 1 client: latency ms p50 %.3f p95 %.3f p99 %.3f\n",
		res.Status.SerialLatency.P50, res.Status.SerialLatency.P95, res.Status.SerialLatency.P99)
	fmt.Fprintf(g.Out, "GET /status, %d clients: %.0f/s; latency ms p50 %.3f p95 %.3f p99 %.3f\n",
		c.Concurrency, res.Status.ConcurrentPerSec, res.Status.ConcurrentLatency.P50, res.Status.ConcurrentLatency.P95, res.Status.ConcurrentLatency.P99)
	if c.JSON != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(c.JSON, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", c.JSON, err)
		}
	}
	return nil
}

// startPrivateServer runs this binary as an API-only server on a temp data
// dir, so the benchmark measures a real process without touching user data.
func startPrivateServer() (string, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "drydock-bench")
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(exe, "server", "--listen", addr, "--data-dir", dir, "--runtime", "local", "--agent", "fake", "--max-concurrent", "0", "--log-level", "warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	stop := func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		os.RemoveAll(dir)
	}
	url := "http://" + addr
	for range 200 {
		if resp, err := http.Get(url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return url, stop, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	return "", nil, fmt.Errorf("private server did not become ready")
}
