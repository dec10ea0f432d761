package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
	"github.com/drydockhq/drydock/pool"
	"github.com/drydockhq/drydock/toolbox"
)

// poolFlag is the server flag of the warm sandbox pool; its absence from
// `drydock server --help` means this build has no pool.
const poolFlag = "pool-headless"

// poolSize is how many sandboxes per profile the warm server keeps.
const poolSize = 2

// errFound stops an event stream once the awaited event arrived.
var errFound = errors.New("found")

// Schedule measures, through a real `drydock server` (fake agent, this
// engine, its own SQLite store), the time from POST /schedule to the first
// tool call of the job: the fake agent calls its first tool as soon as the
// runner has a ready sandbox. Jobs run one at a time, each to its end, so
// cold jobs never overlap. Warm jobs take a sandbox from the server's pool,
// refilled between jobs; without the pool flags they are reported as not
// available.
func (s *Suite) Schedule(ctx context.Context, e *engine) error {
	profiles := []drydock.Profile{drydock.ProfileHeadless, drydock.ProfileDesktop}
	if err := s.scheduleMode(ctx, e, "cold", profiles); err != nil {
		return err
	}
	if !serverHasFlag(s.opts.Bin, poolFlag) {
		for _, p := range profiles {
			s.report.Add(Result{Name: "schedule.first_tool_call", Engine: e.Name, Profile: string(p), Mode: "warm", Unit: "ms",
				Unavailable: fmt.Sprintf("%s server has no --%s flag: this build has no warm sandbox pool", s.opts.Bin, poolFlag)})
		}
		return nil
	}
	return s.scheduleMode(ctx, e, "warm", profiles)
}

func (s *Suite) scheduleMode(ctx context.Context, e *engine, mode string, profiles []drydock.Profile) (err error) {
	nodeID := "bench-" + drydock.RandomHex(4)
	args := []string{"--runtime", "docker", "--docker-host", e.Host, "--agent", "fake", "--max-concurrent", "1",
		"--node-id", nodeID, "--image-headless", e.image(drydock.ProfileHeadless), "--image-desktop", e.image(drydock.ProfileDesktop)}
	if mode == "warm" {
		args = append(args, "--pool-headless", fmt.Sprint(poolSize), "--pool-desktop", fmt.Sprint(poolSize))
	}
	srv, err := startServer(ctx, s.opts.Bin, args...)
	if err != nil {
		return err
	}
	defer func() {
		srv.Stop()
		// A job cut short (Ctrl-C) leaves its sandbox for a recovery that
		// will not come, and a pool's sandboxes are its own: remove all.
		if cerr := e.removeServerSandboxes(ctx, nodeID); err == nil {
			err = cerr
		}
	}()
	cli := client.New(srv.URL, "")
	for _, p := range profiles {
		var post, ready, seen []time.Duration
		starts := map[string]float64{}
		for i := range s.opts.N {
			if mode == "warm" {
				if err := e.waitPool(ctx, nodeID, p, poolSize); err != nil {
					return fmt.Errorf("warm pool on %s: %w (server log: %s)", e.Name, err, srv.logTail())
				}
			}
			s.report.Logf("schedule %s %s %s %d/%d", e.Name, mode, p, i+1, s.opts.N)
			before, err := sandboxStarts(ctx, srv.URL, p)
			if err != nil {
				return err
			}
			jctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			a, b, c, err := firstToolCall(jctx, cli, p)
			cancel()
			if err != nil {
				return fmt.Errorf("%s %s job on %s: %w (server log: %s)", mode, p, e.Name, err, srv.logTail())
			}
			after, err := sandboxStarts(ctx, srv.URL, p)
			if err != nil {
				return err
			}
			for k, v := range after {
				starts[k] += v - before[k]
			}
			post, ready, seen = append(post, a), append(ready, b), append(seen, c)
		}
		s.report.Add(
			Result{Name: "schedule.first_tool_call", Engine: e.Name, Profile: string(p), Mode: mode, Unit: "ms", Dist: dist(ready),
				Extra: map[string]float64{"warm_starts": starts["warm"], "cold_starts": starts["cold"]},
				Note:  "POST /schedule sent → the job's first tool_call event (stamped by the server when the agent issues the call on a ready sandbox)"},
			Result{Name: "schedule.first_tool_call_seen", Engine: e.Name, Profile: string(p), Mode: mode, Unit: "ms", Dist: dist(seen),
				Note: "POST /schedule sent → that event received by the client over SSE"},
			Result{Name: "schedule.post", Engine: e.Name, Profile: string(p), Mode: mode, Unit: "ms", Dist: dist(post), Note: "POST /schedule answered (job durably stored)"},
		)
	}
	return nil
}

// firstToolCall schedules a one-step fake job and returns how long the POST
// took, when the server stamped the first tool_call event, and when the
// client received it, all from the moment the POST was sent; it then waits
// for the job to complete so the next job starts cold.
func firstToolCall(ctx context.Context, cli *client.Client, p drydock.Profile) (post, ready, seen time.Duration, err error) {
	t0 := time.Now()
	job, err := cli.Schedule(ctx, drydock.JobSpec{Task: "bench: first tool call [fake:steps=1] [fake:delay=0s]", Profile: p})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("schedule: %w", err)
	}
	post = time.Since(t0)
	err = cli.StreamEvents(ctx, job.ID, 0, func(ev *drydock.Event) error {
		if ev.Type != drydock.EventToolCall {
			return nil
		}
		seen = time.Since(t0)
		ready = ev.Time.Sub(t0)
		return errFound
	})
	if !errors.Is(err, errFound) {
		if err == nil {
			err = errors.New("the job ended without a tool call")
			if j, jerr := cli.Job(ctx, job.ID); jerr == nil {
				err = fmt.Errorf("the job ended %s without a tool call: %s", j.Status, j.Error)
			}
		}
		return 0, 0, 0, fmt.Errorf("events of %s: %w", job.ID, err)
	}
	done, err := cli.Wait(ctx, job.ID)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("wait for %s: %w", job.ID, err)
	}
	if done.Status != drydock.StatusComplete {
		return 0, 0, 0, fmt.Errorf("job %s ended %s: %s", job.ID, done.Status, done.Error)
	}
	return post, ready, seen, nil
}

// sandboxStarts reads the server's count of sandboxes given to jobs of
// profile, by start (warm, cold), from its metrics.
func sandboxStarts(ctx context.Context, url string, p drydock.Profile) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("server metrics: %w", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	prefix := fmt.Sprintf(`drydock_sandbox_starts_total{profile="%s",start="`, p)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		kind, val, ok := strings.Cut(rest, `"} `)
		if v, err := strconv.ParseFloat(val, 64); ok && err == nil {
			out[kind] = v
		}
	}
	return out, sc.Err()
}

// removeServerSandboxes destroys every sandbox the server nodeID made.
func (e *engine) removeServerSandboxes(ctx context.Context, nodeID string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	list, err := e.rt.List(ctx, map[string]string{drydock.LabelServer: nodeID})
	if err != nil {
		return fmt.Errorf("list sandboxes of %s: %w", nodeID, err)
	}
	for _, sb := range list {
		if err := e.rt.Destroy(ctx, sb.ID); err != nil {
			return fmt.Errorf("destroy sandbox %s of %s: %w", sb.ID, nodeID, err)
		}
	}
	return nil
}

// waitPool waits until the server nodeID holds n ready, unclaimed warm
// sandboxes of profile: what a full pool looks like from outside.
func (e *engine) waitPool(ctx context.Context, nodeID string, p drydock.Profile, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for {
		list, err := e.rt.List(ctx, map[string]string{drydock.LabelServer: nodeID})
		if err != nil {
			return err
		}
		ready, why := 0, ""
		for _, sb := range list {
			// A claimed sandbox keeps its pool label until its job's end
			// destroys it; only unclaimed ones are warm.
			if _, warm := pool.Unclaimed(sb); !warm || sb.Profile != p || sb.State != drydock.SandboxRunning {
				continue
			}
			tc := toolbox.New(sb.Endpoint, sb.Token)
			rctx, rcancel := context.WithTimeout(ctx, time.Second)
			err := tc.WaitReady(rctx, readyComponents(p)...)
			rcancel()
			tc.Close()
			if err == nil {
				ready++
			} else {
				why = fmt.Sprintf("; %s: %v", sb.ID, err)
			}
		}
		if ready >= n {
			// The pool notes a sandbox as warm only after its own readiness
			// poll: give it that moment, or the job may start cold.
			time.Sleep(time.Second)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d %s pool sandboxes ready%s: %w", ready, n, p, why, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
