package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/drydockhq/drydock/eval"
)

// EvalCmd scores a model on a suite of tasks through the server.
type EvalCmd struct {
	Suite       string   `arg:"" help:"The suite: a directory of task directories (each with a task.json), or a suite JSON file."`
	Model       string   `help:"The model every job uses (default: the server's)."`
	Runs        int      `default:"1" help:"How many times each task runs (pass@1 is the mean over runs; pass@N whether any passed)."`
	Concurrency int      `short:"k" default:"2" help:"How many attempts run at once."`
	Task        []string `placeholder:"ID" help:"Run only this task; repeatable."`
	RunID       string   `name:"run-id" placeholder:"ID" help:"The run's id (default: a new one). Running again with an interrupted run's id resumes it: the jobs it made are found, not made again (within the server's idempotency window, 24h by default)."`
	Output      string   `short:"o" placeholder:"FILE" help:"Also save the report as JSON in FILE."`
	JSON        bool     `name:"json" help:"Print the report as JSON instead of a table."`
}

// Help is the long help of `drydock eval --help`.
func (c *EvalCmd) Help() string {
	return `Each task of the suite becomes a job (its task text, uploaded workspace, profile, limits and egress;
metadata eval_suite, eval_run, eval_task, eval_attempt). When the job has finished, the task's check (a
shell command) runs in /workspace of a fresh sandbox holding the finished workspace, with no network
unless the task gives check_egress: exit 0 is a pass. Before it runs, the files the grader owns are put
back from the suite (the task's "graded" paths of its workspace/, every file of its check/ directory,
which the agent never sees), its "refused" paths are removed, and the check runs with a clean PATH and
environment, so that editing the tests or planting a fake runner does not pass it. The report gives
per task and in total the pass rate, steps, tokens, cost and wall time, why each failure failed
(schedule, error, budget, timeout, cancelled, check_failed with the tail of the check's output,
check_error), and which graded files the agent changed. The web UI shows the run at /evals/RUN_ID.
Exit status 0 when the run completed, whatever its score; 1 on an error.
A task.json: {"task": "...", "check": "python3 -P -m unittest discover -s tests -t .", "graded"?:
["tests"], "refused"?: ["**/conftest.py"], "profile"?, "max_steps"?, "timeout"?, "egress"?, "workspace"?
(default: the task directory's workspace/), "check_files"? (default: its check/), "check_timeout"?,
"check_egress"?, "id"?}.`
}

func (c *EvalCmd) Run(g *Globals) error {
	if c.Runs < 1 || c.Runs > 100 {
		return fmt.Errorf("--runs %d: give 1 to 100", c.Runs)
	}
	// Each attempt follows one event stream at a time, and a token may
	// hold 64: leave room for the token's other clients.
	if c.Concurrency < 1 || c.Concurrency > 32 {
		return fmt.Errorf("--concurrency %d: give 1 to 32", c.Concurrency)
	}
	if c.RunID != "" {
		if err := eval.CheckRunID(c.RunID); err != nil {
			return fmt.Errorf("--run-id: %w", err)
		}
	}
	suite, err := eval.Load(c.Suite)
	if err != nil {
		return err
	}
	if err := suite.Select(c.Task); err != nil {
		return err
	}
	runID := c.RunID
	if runID == "" {
		runID = eval.NewRunID()
	}
	ctx, _, stop := g.signalContext()
	defer stop()
	errw := g.errw()
	fmt.Fprintf(errw, "Suite %s: %d task(s) x %d run(s), run %s\n", safe(suite.Name), len(suite.Tasks), c.Runs, safe(runID))
	rep, runErr := eval.Execute(ctx, g.Client(), suite, eval.Options{
		Model: c.Model, Runs: c.Runs, Concurrency: c.Concurrency, RunID: runID,
		Progress: func(r eval.Run) {
			verdict := "passed"
			if !r.Passed {
				verdict = "failed: " + r.Why()
			}
			fmt.Fprintf(errw, "  %s #%d %s (job %s)\n", safe(r.Task), r.Attempt, safe(firstLine(verdict)), safe(r.JobID))
		},
	})
	if rep == nil {
		return runErr
	}
	if c.Output != "" {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
		if err := os.WriteFile(c.Output, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("save the report: %w", errors.Join(err, runErr))
		}
	}
	var werr error
	if c.JSON {
		werr = writeJSON(g.out(), rep)
	} else {
		werr = rep.WriteTable(g.out())
	}
	return errors.Join(runErr, werr)
}
