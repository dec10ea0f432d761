package eval_test

import (
	"fmt"

	"github.com/drydockhq/drydock/eval"
)

// Two tasks run three times each: pass@1 is the mean pass rate over a
// task's runs, then over tasks; pass@3 the share of tasks that passed at
// least once.
func ExampleSummarize() {
	runs := []eval.Run{
		{Task: "hello", Attempt: 1, Passed: true},
		{Task: "hello", Attempt: 2, Passed: true},
		{Task: "hello", Attempt: 3, Passed: false, Reason: eval.ReasonCheckFailed},
		{Task: "fix", Attempt: 1, Passed: false, Reason: eval.ReasonBudget},
		{Task: "fix", Attempt: 2, Passed: false, Reason: eval.ReasonCheckFailed},
		{Task: "fix", Attempt: 3, Passed: false, Reason: eval.ReasonCheckFailed},
	}
	_, total := eval.Summarize([]string{"fix", "hello"}, runs)
	fmt.Printf("pass@1 %.2f, pass@3 %.2f, failures %v\n", total.PassAt1, total.PassAtN, total.Reasons)
	// Output: pass@1 0.33, pass@3 0.50, failures map[budget:1 check_failed:3]
}
