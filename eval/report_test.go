package eval_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/eval"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// pass@1 is the mean over a task's runs, averaged over tasks with each task
// weighing the same; pass@N counts the tasks with any passing run; usage,
// steps and wall time add up; failures are counted by reason.
func TestSummarize(t *testing.T) {
	t.Parallel()
	u := func(in, out int64, usd float64) drydock.Usage {
		return drydock.Usage{InputTokens: in, OutputTokens: out, CostUSD: usd}
	}
	runs := []eval.Run{
		{Task: "a", Attempt: 2, Passed: true, Steps: 3, Usage: u(100, 10, 0.01), WallSeconds: 10},
		{Task: "a", Attempt: 1, Passed: false, Reason: eval.ReasonCheckFailed, Steps: 5, Usage: u(200, 20, 0.02), WallSeconds: 20},
		{Task: "a", Attempt: 3, Passed: true, Steps: 4, Usage: u(100, 10, 0.01), WallSeconds: 30},
		{Task: "b", Attempt: 1, Passed: false, Reason: eval.ReasonBudget, Steps: 10},
		{Task: "b", Attempt: 2, Passed: false, Reason: eval.ReasonCheckFailed, Steps: 2},
		{Task: "b", Attempt: 3, Passed: false, Reason: eval.ReasonCheckFailed, Steps: 2},
		{Task: "c", Attempt: 1, Passed: true, Steps: 1},
		{Task: "c", Attempt: 2, Passed: true, Steps: 1},
		{Task: "c", Attempt: 3, Passed: true, Steps: 1},
	}
	tasks, total := eval.Summarize([]string{"a", "b", "c"}, runs)
	if len(tasks) != 3 {
		t.Fatalf("%d task summaries", len(tasks))
	}
	a := tasks[0]
	if a.ID != "a" || a.Passed != 2 || a.Runs != 3 || !near(a.PassAt1, 2.0/3) || !a.PassAtN || a.Steps != 12 ||
		a.Usage.InputTokens != 400 || a.Usage.OutputTokens != 40 || !near(a.Usage.CostUSD, 0.04) || a.WallSeconds != 60 {
		t.Errorf("task a = %+v", a)
	}
	if a.Attempts[0].Attempt != 1 || a.Attempts[2].Attempt != 3 {
		t.Errorf("attempts not in order: %+v", a.Attempts)
	}
	if b := tasks[1]; b.Passed != 0 || b.PassAt1 != 0 || b.PassAtN {
		t.Errorf("task b = %+v", b)
	}
	if c := tasks[2]; c.PassAt1 != 1 || !c.PassAtN {
		t.Errorf("task c = %+v", c)
	}
	// pass@1 = (2/3 + 0 + 1) / 3; pass@3 = 2 of 3 tasks.
	if total.Tasks != 3 || total.Runs != 9 || total.Passed != 5 || !near(total.PassAt1, (2.0/3+0+1)/3) || !near(total.PassAtN, 2.0/3) || total.Steps != 29 {
		t.Errorf("total = %+v", total)
	}
	if total.Reasons[eval.ReasonCheckFailed] != 3 || total.Reasons[eval.ReasonBudget] != 1 || len(total.Reasons) != 2 {
		t.Errorf("failure reasons = %v", total.Reasons)
	}
}

// A task whose attempts never ran (an interrupted run) counts as a task
// with no pass rather than vanishing from the denominator.
func TestSummarizeTaskWithoutRuns(t *testing.T) {
	t.Parallel()
	tasks, total := eval.Summarize([]string{"a", "b"}, []eval.Run{{Task: "a", Attempt: 1, Passed: true}})
	if tasks[1].Runs != 0 || tasks[1].PassAt1 != 0 || !near(total.PassAt1, 0.5) || !near(total.PassAtN, 0.5) {
		t.Errorf("tasks %+v, total %+v", tasks, total)
	}
}

// The table says which tasks passed and why the others failed, with the
// tail of a failed check's output, and escapes what a sandbox printed.
func TestWriteTable(t *testing.T) {
	t.Parallel()
	runs := []eval.Run{
		{Task: "hello", Attempt: 1, JobID: "j1", Passed: true, Steps: 3},
		{Task: "fix-test", Attempt: 1, JobID: "j2", Reason: eval.ReasonCheckFailed, Steps: 4,
			Check: &eval.CheckResult{ExitCode: 1, Output: "collected 3 items\nFAILED test_app.py::test_sum\x1b[2J\n1 failed, 2 passed\n"}},
		{Task: "slow", Attempt: 1, JobID: "j3", Reason: eval.ReasonBudget, Error: "the agent used all of its 2 steps without finishing the task"},
	}
	rep := &eval.Report{Suite: "s", RunID: "r1", Model: "m", Runs: 1, UIURL: "http://127.0.0.1:8080/evals/r1"}
	rep.Tasks, rep.Total = eval.Summarize([]string{"fix-test", "hello", "slow"}, runs)
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"hello     1/1", "fix-test  0/1", "#1 check failed (exit 1)", "slow      0/1", "#1 budget: the agent used all of its 2 steps",
		"pass@1 33.3% (1 of 3 runs passed)", "- fix-test #1 (job j2): check failed (exit 1)", "    | FAILED test_app.py::test_sum^[[2J",
		"    | 1 failed, 2 passed", "Web UI: http://127.0.0.1:8080/evals/r1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("an escape sequence reached the terminal:\n%q", out)
	}
}

// A failure says which graded files the agent did not leave as the suite
// has them, in the table and in the JSON report.
func TestReportNamesChangedGradedFiles(t *testing.T) {
	t.Parallel()
	r := eval.Run{Task: "cli-flag", Attempt: 1, JobID: "j1", Reason: eval.ReasonCheckFailed, Check: &eval.CheckResult{ExitCode: 1,
		GradedChanges: []eval.FileChange{{Path: "tests/test_cli.py", Change: "changed"}, {Path: "tests/test_more.py", Change: "changed"},
			{Path: "tests/__init__.py", Change: "deleted"}, {Path: "conftest.py", Change: "added"}},
		MoreGradedChanges: 2}}
	want := "check failed (exit 1); the agent changed tests/test_cli.py, tests/test_more.py; deleted tests/__init__.py; added conftest.py; and 2 more"
	if got := r.Why(); got != want {
		t.Errorf("Why() = %q\nwant %q", got, want)
	}
	rep := &eval.Report{Suite: "s", RunID: "r", Runs: 1}
	rep.Tasks, rep.Total = eval.Summarize([]string{"cli-flag"}, []eval.Run{r})
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "- cli-flag #1 (job j1): "+want) {
		t.Errorf("the table lacks the changed files:\n%s", b.String())
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"graded_changes":[{"path":"tests/test_cli.py","change":"changed"},`) || !strings.Contains(string(data), `"more_graded_changes":2`) {
		t.Errorf("the JSON report: %s", data)
	}
	// A passing run's changes are in the JSON only; an unchanged one says nothing.
	if (&eval.Run{Passed: true, Check: r.Check}).Why() != "" || (&eval.Run{Reason: eval.ReasonBudget, Error: "x", Check: &eval.CheckResult{}}).Why() != "budget: x" {
		t.Error("Why of a pass or of a run without changes")
	}
}
