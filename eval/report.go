package eval

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
)

// Format names the report's JSON shape, for tools that read saved reports.
const Format = "drydock.eval/v1"

// Why a run failed, in the order they are decided: a job that did not
// finish well fails for that reason, whatever its check says.
const (
	ReasonSchedule    = "schedule"     // the job could not be created
	ReasonError       = "error"        // the job ended in error
	ReasonBudget      = "budget"       // the agent used all of its steps
	ReasonTimeout     = "timeout"      // the job ran out of time
	ReasonCancelled   = "cancelled"    // someone cancelled the job
	ReasonCheckFailed = "check_failed" // the check exited non-zero or timed out
	ReasonCheckError  = "check_error"  // the check could not be run
)

// Run is one attempt at one task: its job, how the job ended, and what its
// check said.
type Run struct {
	Task    string `json:"task"`
	Attempt int    `json:"attempt"` // 1-based
	JobID   string `json:"job_id,omitempty"`
	// JobURL is the job's status link as the server gave it.
	JobURL      string            `json:"job_url,omitempty"`
	Status      drydock.JobStatus `json:"status,omitempty"`
	Passed      bool              `json:"passed"`
	Reason      string            `json:"reason,omitempty"`
	Error       string            `json:"error,omitempty"`
	Steps       int               `json:"steps"`
	Usage       drydock.Usage     `json:"usage"`
	WallSeconds float64           `json:"wall_seconds"`
	Check       *CheckResult      `json:"check,omitempty"`

	model  string // the job's, for a report whose model was the server's default
	scored bool   // the attempt ran to its verdict (not cut short by an interruption)
}

// CheckResult is how the task's check ended in the finished workspace.
type CheckResult struct {
	JobID    string `json:"job_id,omitempty"` // the held follow-up it ran in
	ExitCode int    `json:"exit_code"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// Output is the tail of the check's output (stdout and stderr
	// interleaved), as the sandbox printed it.
	Output string `json:"output,omitempty"`
	// Error is why the check could not run (no archived workspace, the
	// sandbox failed); ExitCode is then -1.
	Error string `json:"error,omitempty"`
	// GradedChanges are the graded files (and refused paths) that the
	// agent's workspace did not hold as the suite has them: the check ran
	// on the suite's copies. MoreGradedChanges counts those left out
	// (at most 100 are listed).
	GradedChanges     []FileChange `json:"graded_changes,omitempty"`
	MoreGradedChanges int          `json:"more_graded_changes,omitempty"`
}

// Passed reports whether the check ran and exited 0.
func (c *CheckResult) Passed() bool {
	return c != nil && c.Error == "" && !c.TimedOut && c.ExitCode == 0
}

// Report is a suite run's outcome, per task and in total.
type Report struct {
	Format     string        `json:"format"`
	Suite      string        `json:"suite"`
	RunID      string        `json:"run_id"`
	Model      string        `json:"model,omitempty"`
	Runs       int           `json:"runs"` // attempts per task
	StartedAt  time.Time     `json:"started_at"`
	FinishedAt time.Time     `json:"finished_at"`
	Tasks      []TaskSummary `json:"tasks"`
	Total      Total         `json:"total"`
	// UIURL is the web UI's page for this run, when the server is known.
	UIURL string `json:"ui_url,omitempty"`
}

// TaskSummary is one task over its attempts.
type TaskSummary struct {
	ID     string `json:"id"`
	Passed int    `json:"passed"` // attempts that passed
	Runs   int    `json:"runs"`
	// PassAt1 is the share of attempts that passed (pass@1 estimated as
	// the mean over runs); PassAtN whether any attempt passed.
	PassAt1     float64       `json:"pass_at_1"`
	PassAtN     bool          `json:"pass_at_n"`
	Steps       int           `json:"steps"` // all attempts
	Usage       drydock.Usage `json:"usage"` // all attempts
	WallSeconds float64       `json:"wall_seconds"`
	Attempts    []Run         `json:"attempts"`
}

// Total sums a report over its tasks. PassAt1 is the mean of the tasks'
// PassAt1 (each task weighs the same whatever its number of attempts);
// PassAtN the share of tasks with at least one passing attempt.
type Total struct {
	Tasks       int            `json:"tasks"`
	Runs        int            `json:"runs"`
	Passed      int            `json:"passed"`
	PassAt1     float64        `json:"pass_at_1"`
	PassAtN     float64        `json:"pass_at_n"`
	Steps       int            `json:"steps"`
	Usage       drydock.Usage  `json:"usage"`
	WallSeconds float64        `json:"wall_seconds"` // of the whole suite run
	Reasons     map[string]int `json:"failure_reasons,omitempty"`
}

// Summarize builds the per-task and total figures from the runs, tasks in
// the order given and attempts in order.
func Summarize(taskIDs []string, runs []Run) ([]TaskSummary, Total) {
	var tasks []TaskSummary
	var total Total
	for _, id := range taskIDs {
		ts := TaskSummary{ID: id}
		for _, r := range runs {
			if r.Task != id {
				continue
			}
			ts.Runs++
			if r.Passed {
				ts.Passed++
			} else {
				if total.Reasons == nil {
					total.Reasons = map[string]int{}
				}
				total.Reasons[r.Reason]++
			}
			ts.Steps += r.Steps
			ts.Usage = ts.Usage.Add(r.Usage)
			ts.WallSeconds += r.WallSeconds
			ts.Attempts = append(ts.Attempts, r)
		}
		slices.SortFunc(ts.Attempts, func(a, b Run) int { return a.Attempt - b.Attempt })
		if ts.Runs > 0 {
			ts.PassAt1 = float64(ts.Passed) / float64(ts.Runs)
		}
		ts.PassAtN = ts.Passed > 0
		tasks = append(tasks, ts)

		total.Tasks++
		total.Runs += ts.Runs
		total.Passed += ts.Passed
		total.PassAt1 += ts.PassAt1
		if ts.PassAtN {
			total.PassAtN++
		}
		total.Steps += ts.Steps
		total.Usage = total.Usage.Add(ts.Usage)
	}
	if total.Tasks > 0 {
		total.PassAt1 /= float64(total.Tasks)
		total.PassAtN /= float64(total.Tasks)
	}
	return tasks, total
}

// classify says why a finished job that did not complete failed, from its
// status and error.
func classify(j *drydock.Job) string {
	switch j.Status {
	case drydock.StatusComplete:
		return ""
	case drydock.StatusCancelled:
		return ReasonCancelled
	}
	msg := strings.ToLower(j.Error)
	switch {
	case strings.Contains(msg, "timed out"):
		return ReasonTimeout
	case strings.Contains(msg, "all of its") && strings.Contains(msg, "steps"), strings.Contains(msg, "budget"):
		return ReasonBudget
	}
	return ReasonError
}

// Why is a one-line account of a failed run, for the table: the reason,
// and the graded files the agent did not leave as the suite has them.
func (r *Run) Why() string {
	why := r.why()
	if t := r.Check.Tampering(); t != "" && why != "" {
		why += "; " + t
	}
	return why
}

func (r *Run) why() string {
	switch r.Reason {
	case "":
		return ""
	case ReasonCheckFailed:
		if r.Check != nil && r.Check.TimedOut {
			return "check timed out"
		}
		if r.Check != nil {
			return "check failed (exit " + strconv.Itoa(r.Check.ExitCode) + ")"
		}
	case ReasonCheckError:
		if r.Check != nil {
			return "check not run: " + r.Check.Error
		}
	case ReasonBudget:
		return "budget: " + r.Error
	case ReasonTimeout:
		return "timeout: " + r.Error
	case ReasonCancelled:
		return "cancelled"
	}
	if r.Error != "" {
		return r.Reason + ": " + r.Error
	}
	return r.Reason
}

// Tampering is a one-line account of the graded files the agent did not
// leave as the suite has them ("the agent changed tests/test_cli.py"), ""
// when it left them all (or the check did not get that far).
func (c *CheckResult) Tampering() string {
	if c == nil || len(c.GradedChanges) == 0 {
		return ""
	}
	var order []string
	byChange := map[string][]string{}
	for _, fc := range c.GradedChanges {
		if byChange[fc.Change] == nil {
			order = append(order, fc.Change)
		}
		byChange[fc.Change] = append(byChange[fc.Change], fc.Path)
	}
	var parts []string
	for _, ch := range order {
		parts = append(parts, ch+" "+strings.Join(byChange[ch], ", "))
	}
	s := "the agent " + strings.Join(parts, "; ")
	if c.MoreGradedChanges > 0 {
		s += "; and " + strconv.Itoa(c.MoreGradedChanges) + " more"
	}
	return s
}
