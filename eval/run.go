package eval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
)

// Metadata keys every job of a suite run carries, so that the server's own
// records say which run, task and attempt a job belongs to (the web UI's
// /evals/{run} page lists a run from them).
const (
	MetaSuite   = "eval_suite"
	MetaRun     = "eval_run"
	MetaTask    = "eval_task"
	MetaAttempt = "eval_attempt"
	// MetaRole is "check" on the held follow-up a check ran in, and
	// MetaCheckOf names the job whose workspace it checked.
	MetaRole    = "eval_role"
	MetaCheckOf = "eval_check_of"
)

// Options tunes a suite run.
type Options struct {
	// Model is every job's model; "" is the server's default.
	Model string
	// Runs is how many times each task runs (pass@N); at least 1.
	Runs int
	// Concurrency is how many attempts are in flight at once; at least 1.
	Concurrency int
	// RunID names the suite run in the jobs' metadata and idempotency
	// keys: running again with the same id (within the server's
	// idempotency window, 24 h by default) gets the jobs already made
	// instead of new ones. "" makes a new one (NewRunID).
	RunID string
	// Progress hears of each attempt as it ends, one call at a time.
	Progress func(Run)
	Log      *slog.Logger
}

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckRunID checks a run id given by a user.
func CheckRunID(id string) error {
	if !runIDPattern.MatchString(id) {
		return fmt.Errorf("run id %q: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", id)
	}
	return nil
}

// NewRunID is a fresh run id: the time (so that ids sort) and randomness.
func NewRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// CheckLog is where a check's output (as the API returned it: capped at
// 30000 bytes, head and tail kept) is saved in its job's workspace.
const CheckLog = "drydock-eval-check.log"

// outputTail is how much of a check's output the report keeps.
const outputTail = 4000

// Execute runs every task of the suite opt.Runs times through the server
// c talks to, checks each finished workspace, and reports. It returns the
// report of what finished also when ctx ends early, with ctx's error; the
// jobs already scheduled go on on the server.
func Execute(ctx context.Context, c *client.Client, s *Suite, opt Options) (*Report, error) {
	if opt.Runs < 1 {
		opt.Runs = 1
	}
	if opt.Concurrency < 1 {
		opt.Concurrency = 1
	}
	if opt.RunID == "" {
		opt.RunID = NewRunID()
	} else if err := CheckRunID(opt.RunID); err != nil {
		return nil, err
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	// One cheap authenticated call first: a wrong URL or token is one clear
	// error, not a failed schedule for every attempt.
	if _, err := c.Jobs(ctx, client.ListOptions{Limit: 1}); err != nil {
		return nil, fmt.Errorf("reach the server: %w", err)
	}
	rep := &Report{Format: Format, Suite: s.Name, RunID: opt.RunID, Model: opt.Model, Runs: opt.Runs, StartedAt: time.Now().UTC()}
	if base := c.BaseURL(); base != "" {
		rep.UIURL = strings.TrimSuffix(base, "/") + "/evals/" + url.PathEscape(opt.RunID)
	}
	type item struct {
		task    *Task
		attempt int
	}
	work := make(chan item)
	var (
		mu   sync.Mutex
		runs []Run
		wg   sync.WaitGroup
	)
	for range opt.Concurrency {
		wg.Go(func() {
			for it := range work {
				r := attempt(ctx, c, s, it.task, it.attempt, opt)
				if ctx.Err() != nil && !r.scored {
					continue // cut short by the interruption: no result, not a failure
				}
				mu.Lock()
				runs = append(runs, r)
				if opt.Progress != nil {
					opt.Progress(r)
				}
				mu.Unlock()
			}
		})
	}
	// Attempts go round the tasks (every task's first attempt, then every
	// second one), so that an interrupted run has scored as many tasks as
	// it could.
feed:
	for n := 1; n <= opt.Runs; n++ {
		for _, t := range s.Tasks {
			select {
			case work <- item{t, n}:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(work)
	wg.Wait()

	ids := make([]string, len(s.Tasks))
	for i, t := range s.Tasks {
		ids[i] = t.ID
	}
	rep.Tasks, rep.Total = Summarize(ids, runs)
	rep.FinishedAt = time.Now().UTC()
	rep.Total.WallSeconds = rep.FinishedAt.Sub(rep.StartedAt).Seconds()
	if rep.Model == "" {
		for _, r := range runs {
			if r.model != "" {
				rep.Model = r.model
				break
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("suite run %s interrupted after %d of %d attempts (its jobs go on; run again with the same run id to resume): %w",
			opt.RunID, len(runs), opt.Runs*len(s.Tasks), context.Cause(ctx))
	}
	return rep, nil
}

// attempt runs one task once: schedule, wait, check.
func attempt(ctx context.Context, c *client.Client, s *Suite, t *Task, n int, opt Options) Run {
	r := Run{Task: t.ID, Attempt: n}
	meta := map[string]string{MetaSuite: s.Name, MetaRun: opt.RunID, MetaTask: t.ID, MetaAttempt: strconv.Itoa(n)}
	spec := drydock.JobSpec{Task: t.Task, Model: opt.Model, MaxSteps: t.MaxSteps, Timeout: t.Timeout, Profile: t.Profile,
		Metadata: meta, Egress: t.Egress}
	// The key makes a resumed run (same run id) find its jobs rather than
	// make them again.
	key := "drydock-eval/" + opt.RunID + "/" + t.ID + "/" + strconv.Itoa(n)
	sopts := []client.ScheduleOption{client.WithIdempotencyKey(key)}
	if t.dir != "" {
		sopts = append(sopts, client.WithWorkspace(client.WorkspaceDir(t.dir, client.PackOptions{})))
	}
	t0 := time.Now()
	j, err := c.Schedule(ctx, spec, sopts...)
	if err != nil {
		r.Reason, r.Error = ReasonSchedule, err.Error()
		r.WallSeconds = time.Since(t0).Seconds()
		return r
	}
	r.JobID, r.JobURL = j.ID, j.StatusURL
	log := opt.Log.With("task", t.ID, "attempt", n, "job_id", j.ID)
	log.Info("eval job scheduled")
	if j, err = c.Wait(ctx, j.ID); err != nil {
		r.Reason, r.Error = ReasonError, "wait for the job: "+err.Error()
		r.WallSeconds = time.Since(t0).Seconds()
		return r
	}
	r.Status, r.Steps, r.Usage, r.model = j.Status, j.Steps, j.Usage, j.Model
	r.WallSeconds = time.Since(t0).Seconds()
	if j.StartedAt != nil && j.FinishedAt != nil {
		// The job's own time, without its wait in the server's queue,
		// which depends on the concurrency rather than the model.
		r.WallSeconds = j.FinishedAt.Sub(*j.StartedAt).Seconds()
	}
	r.Reason, r.Error = classify(j), j.Error
	if j.DownloadURL == "" && j.DownloadURLTar == "" {
		r.Check = &CheckResult{ExitCode: -1, Error: fmt.Sprintf("job %s ended %s without an archived workspace", j.ID, j.Status)}
	} else {
		r.Check = check(ctx, c, t, j, meta, key, log)
	}
	if r.Reason == "" {
		switch {
		case r.Check.Error != "":
			r.Reason = ReasonCheckError
		case !r.Check.Passed():
			r.Reason = ReasonCheckFailed
		}
	}
	r.Passed = r.Reason == ""
	r.scored = ctx.Err() == nil || r.Check == nil || r.Check.Error == ""
	log.Info("eval attempt scored", "passed", r.Passed, "reason", r.Reason)
	return r
}

// errHeld stops the event stream once the check's sandbox is ready.
var errHeld = errors.New("sandbox held")

// check runs the task's check in a fresh sandbox holding job's finished
// workspace: a follow-up with no agent, cancelled once the check is done.
func check(ctx context.Context, c *client.Client, t *Task, j *drydock.Job, meta map[string]string, key string, log *slog.Logger) *CheckResult {
	timeout := time.Duration(t.CheckTimeout)
	if timeout == 0 {
		timeout = DefaultCheckTimeout
	}
	egress := t.CheckEgress
	if egress == nil {
		egress = []string{}
	}
	cm := map[string]string{MetaRole: "check", MetaCheckOf: j.ID}
	for k, v := range meta {
		cm[k] = v
	}
	req := client.FollowUpRequest{
		Text:  "drydock eval: the check of task " + t.ID + "\n\n" + t.Check,
		Agent: drydock.AgentNone, Egress: egress, Metadata: cm,
		// Held for the check's time and its sandbox's start; the cancel
		// below ends it sooner.
		Timeout: drydock.Duration(timeout + 10*time.Minute),
	}
	if len(j.SecretNames) > 0 {
		req.Secrets = drydock.SecretValues{} // a check needs none of the agent's
	}
	held, err := c.FollowUp(ctx, j.ID, req, client.WithIdempotencyKey(key+"/check"))
	if err == nil && held.Status.Terminal() {
		// A resumed run: its key found the sandbox an earlier check ran in,
		// now gone. Check again in a new one.
		held, err = c.FollowUp(ctx, j.ID, req)
	}
	if err != nil {
		return &CheckResult{ExitCode: -1, Error: "create the check's sandbox: " + err.Error()}
	}
	defer func() {
		cctx, done := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer done()
		if _, err := c.Cancel(cctx, held.ID); err != nil && drydock.ErrorCode(err) != drydock.ECONFLICT {
			log.Warn("cancel the check's sandbox", "check_job_id", held.ID, "err", err)
		}
	}()
	if err := waitHeld(ctx, c, held.ID); err != nil {
		return &CheckResult{JobID: held.ID, ExitCode: -1, Error: "the check's sandbox was not ready: " + err.Error()}
	}
	// The check's output is the whole of what the API returned; the report
	// keeps its tail.
	cr := guarded(ctx, apiShell{c, held.ID}, t, sandboxSetup(held.ID), timeout)
	cr.JobID = held.ID
	full := cr.Output
	cr.Output = tail(full, outputTail)
	if cr.Error != "" {
		return cr
	}
	// Kept in the check job's archive, where the web UI's page of the run
	// reads its last lines: the server keeps no command output apart from
	// that. What the agent changed of the graded files comes last.
	saved := full
	if t := cr.Tampering(); t != "" {
		saved = strings.TrimRight(saved, "\n") + "\n\ndrydock eval: " + t + " (the check ran on the suite's copies)\n"
	}
	if _, err := c.WriteFile(ctx, held.ID, CheckLog, saved); err != nil {
		log.Warn("save the check's output in its sandbox", "check_job_id", held.ID, "err", err)
	}
	if len(cr.GradedChanges) > 0 {
		log.Info("the agent changed graded files; the check ran on the suite's", "changes", len(cr.GradedChanges)+cr.MoreGradedChanges)
	}
	return cr
}

// apiShell is a held sandbox as the check's shell.
type apiShell struct {
	c  *client.Client
	id string
}

func (s apiShell) run(ctx context.Context, command string, timeout time.Duration) (int, string, bool, error) {
	out, err := s.c.RunCommand(ctx, s.id, command, timeout)
	if err != nil {
		return -1, "", false, err
	}
	return out.ExitCode, out.Output, out.TimedOut, nil
}

func (s apiShell) write(ctx context.Context, path, text string) error {
	_, err := s.c.WriteFile(ctx, s.id, path, text)
	return err
}

// isHeld reports whether e says the job's sandbox is held for its caller.
func isHeld(e *drydock.Event) bool { return drydock.LogKind(e) == drydock.LogSandboxHeld }

// waitHeld waits until the held job id's sandbox is ready: from its event
// stream, or, when the stream is refused (a token's streams are bounded)
// or breaks, by reading its events once a second.
func waitHeld(ctx context.Context, c *client.Client, id string) error {
	err := c.StreamEvents(ctx, id, 0, func(e *drydock.Event) error {
		if isHeld(e) {
			return errHeld
		}
		return nil
	})
	switch {
	case errors.Is(err, errHeld):
		return nil
	case ctx.Err() != nil:
		return err
	}
	var after int64
	for {
		page, err := c.Events(ctx, id, after, 1000)
		if err != nil {
			return err
		}
		for _, e := range page.Events {
			if isHeld(e) {
				return nil
			}
		}
		after = page.NextAfter
		if page.Done {
			j, err := c.Job(ctx, id)
			if err != nil {
				return err
			}
			return fmt.Errorf("it ended %s before its sandbox was ready: %s", j.Status, j.Error)
		}
		if len(page.Events) == 0 {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(time.Second):
			}
		}
	}
}

// tail is the last n bytes of s, cut at a rune boundary.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}
