// Package eval scores a model on a suite of tasks through a Drydock server:
// each task is scheduled as a job (with its uploaded workspace, profile,
// limits and egress), and once the job has finished its check, a shell
// command, runs in a fresh sandbox holding the finished workspace (a
// follow-up of the job with no agent), behind a guard: the files the
// grader owns (a task's graded paths and check/ files) are put back from the
// suite first, its refused paths removed, and the check runs with a clean
// PATH and environment, so that an agent cannot pass it by editing the
// tests or planting a fake runner. The report gives, per task and in
// total, the pass rate (pass@1 and, over several runs, pass@N), steps,
// tokens, cost, wall time, why each failure failed, and which graded files
// the agent changed.
//
// It is a client of the HTTP API (package client), as `drydock eval` is:
// every job carries the run in its metadata (eval_suite, eval_run,
// eval_task, eval_attempt; a check's job also eval_role "check" and
// eval_check_of), which is how the web UI's /evals/{run} page finds a run.
package eval
