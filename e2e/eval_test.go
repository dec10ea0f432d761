package e2e_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	drydockeval "github.com/drydockhq/drydock/eval"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// evalModel is a scripted model that plays, for each task of the starter
// suite it is given, the turns of that task: it tells the tasks apart by
// their text and counts its own turns in the conversation.
func evalModel(t *testing.T, plays map[string]func(step int) llmtest.Turn) llmtest.Options {
	t.Helper()
	suite, err := drydockeval.Load(filepath.Join("..", "evals", "starter"))
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{}
	for _, task := range suite.Tasks {
		texts[task.ID] = task.Task
	}
	return llmtest.Options{Func: func(r *llmtest.Request) llmtest.Turn {
		var user strings.Builder
		step := 0
		for _, m := range r.Messages {
			if m.Role == llm.RoleAssistant {
				step++
			} else {
				user.WriteString(m.Text)
			}
		}
		for id, play := range plays {
			if strings.Contains(user.String(), texts[id]) {
				return play(step)
			}
		}
		return llmtest.Turn{Fault: llmtest.BadRequest, Text: "the scripted model has no play for this task"}
	}}
}

func finish(summary string) llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("finish", fmt.Sprintf(`{"summary": %q}`, summary))}}
}

func bash(command string) llmtest.Turn {
	in, _ := json.Marshal(map[string]any{"command": command, "timeout": 120})
	return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("bash", string(in))}}
}

// drydock eval end to end: the real binary scores six tasks of the starter
// suite on Docker against a scripted model that passes two of them and
// fails the others on purpose, each in another way, and the report says
// exactly which passed and why each of the others failed: a check that
// failed (with the check's own output), an agent out of steps, a model
// error, and an agent that cheats (a botched refactor whose tests it
// rewrote and whose package.json test script it set to "true") and whose
// check fails all the same, naming the graded files it changed. Each check
// ran in a held follow-up of its job, which was cancelled once it had run,
// and every job carries the run's metadata.
func TestEvalStarterTasks(t *testing.T) {
	t.Parallel()
	if os.Getenv("DRYDOCK_TEST_E2E") == "" {
		t.Skip("DRYDOCK_TEST_E2E not set: this test runs real sandboxes for several minutes of CPU (make test sets it)")
	}
	solution, err := os.ReadFile(filepath.Join("..", "evals", "starter", "fix-failing-test", "solution.sh"))
	if err != nil {
		t.Fatal(err)
	}
	refactor, err := os.ReadFile(filepath.Join("..", "evals", "starter", "refactor-format", "solution.sh"))
	if err != nil {
		t.Fatal(err)
	}
	plays := map[string]func(int) llmtest.Turn{
		"hello-txt": func(step int) llmtest.Turn {
			if step == 0 {
				return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("str_replace_based_edit_tool", `{"command": "create", "path": "/workspace/hello.txt", "file_text": "hello world\n"}`)}}
			}
			return finish("Created hello.txt.")
		},
		"fix-failing-test": func(step int) llmtest.Turn {
			switch step {
			case 0:
				return bash("cd /workspace && python3 -m unittest -q 2>&1 | tail -3")
			case 1:
				return bash("cd /workspace && " + string(solution))
			}
			return finish("mean used floor division; it divides now.")
		},
		// Claims success without doing the work: its check must fail.
		"cli-flag": func(int) llmtest.Turn { return finish("Added --ignore-case.") },
		// Never finishes: its 20 steps run out.
		"log-top-paths": func(step int) llmtest.Turn { return bash(fmt.Sprintf("echo looking %d", step)) },
		// The provider refuses the request.
		"sqlite-report": func(int) llmtest.Turn {
			return llmtest.Turn{Fault: llmtest.BadRequest, Text: "this model cannot do SQL"}
		},
		// Cheats: the refactor gets the units wrong, and rather than fix it
		// the agent rewrites the test that says so and makes "npm test"
		// pass whatever happens. The old check (npm test, then greps and a
		// hidden test of formatMoney alone) passed this.
		"refactor-format": func(step int) llmtest.Turn {
			if step > 0 {
				return finish("formatMoney is in src/money.js; the tests pass.")
			}
			return bash("cd /workspace && " + string(refactor) + "\nsed -i 's/\\* 100)/* 10)/' src/invoice.js src/receipt.js\n" +
				`printf "import test from 'node:test';\ntest('billing', () => {});\n" > test/billing.test.js` + "\n" +
				`sed -i 's|"test": "[^"]*"|"test": "true"|' package.json && npm test`)
		},
	}
	e := newAgentEnv(t, "docker", "DRYDOCK_TEST_DOCKER_HOST", "openai", evalModel(t, plays))
	report := filepath.Join(t.TempDir(), "report.json")
	args := []string{"eval", filepath.Join("..", "evals", "starter"), "--model", "test-model", "--concurrency", "3", "--run-id", "e2e-run-1", "-o", report}
	for id := range plays {
		args = append(args, "--task", id)
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "DRYDOCK_URL="+e.url(), "DRYDOCK_TOKEN=")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("drydock eval: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("drydock eval printed:\n%s", stdout.String())
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep drydockeval.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}

	want := map[string]string{"hello-txt": "", "fix-failing-test": "", "cli-flag": drydockeval.ReasonCheckFailed,
		"log-top-paths": drydockeval.ReasonBudget, "sqlite-report": drydockeval.ReasonError, "refactor-format": drydockeval.ReasonCheckFailed}
	if len(rep.Tasks) != len(want) {
		t.Fatalf("report has %d tasks; want %d: %s", len(rep.Tasks), len(want), data)
	}
	runs := map[string]drydockeval.Run{}
	for _, ts := range rep.Tasks {
		if ts.Runs != 1 || len(ts.Attempts) != 1 {
			t.Fatalf("task %s: %d runs", ts.ID, ts.Runs)
		}
		r := ts.Attempts[0]
		runs[ts.ID] = r
		if r.Passed != (want[ts.ID] == "") || r.Reason != want[ts.ID] {
			t.Errorf("task %s: passed %v, reason %q (%s); want reason %q", ts.ID, r.Passed, r.Reason, r.Why(), want[ts.ID])
		}
	}
	if rep.Total.Passed != 2 || rep.Total.Runs != 6 || math.Abs(rep.Total.PassAt1-1.0/3) > 1e-9 || math.Abs(rep.Total.PassAtN-1.0/3) > 1e-9 ||
		rep.Total.Reasons[drydockeval.ReasonCheckFailed] != 2 || rep.Total.Reasons[drydockeval.ReasonBudget] != 1 || rep.Total.Reasons[drydockeval.ReasonError] != 1 {
		t.Errorf("total = %+v", rep.Total)
	}
	if r := runs["cli-flag"]; r.Check == nil || r.Check.ExitCode == 0 || !strings.Contains(r.Check.Output, "unrecognized arguments: --ignore-case") {
		t.Errorf("cli-flag's check: %+v; want a failure with argparse's message in the output", r.Check)
	}
	if r := runs["refactor-format"]; r.Check == nil || !strings.Contains(r.Check.Output, "invoice lines") ||
		!slices.Equal(r.Check.GradedChanges, []drydockeval.FileChange{{Path: "test/billing.test.js", Change: "changed"}, {Path: "package.json", Change: "changed"}}) {
		t.Errorf("refactor-format's check: %+v; want the suite's billing test failing and the two graded files named", r.Check)
	}
	for id, r := range runs {
		if id != "refactor-format" && r.Check != nil && len(r.Check.GradedChanges) > 0 {
			t.Errorf("%s: graded changes %v; its agent changed none", id, r.Check.GradedChanges)
		}
	}
	if r := runs["log-top-paths"]; r.Steps != 20 || !strings.Contains(r.Error, "20 steps") {
		t.Errorf("log-top-paths: %d steps, error %q; want its 20 steps used up", r.Steps, r.Error)
	}
	if r := runs["sqlite-report"]; !strings.Contains(r.Error, "this model cannot do SQL") {
		t.Errorf("sqlite-report's error %q; want the provider's message", r.Error)
	}
	for _, id := range []string{"hello-txt", "fix-failing-test"} {
		if r := runs[id]; r.Check == nil || r.Check.ExitCode != 0 || r.Status != drydock.StatusComplete || r.Steps == 0 || r.Usage.InputTokens == 0 {
			t.Errorf("%s: %+v; want a complete job with steps and tokens, whose check exited 0", id, r)
		}
	}
	if r := runs["fix-failing-test"]; !strings.Contains(r.Check.Output, "hidden test passed") {
		t.Errorf("fix-failing-test's check output %q; want its hidden test's line", r.Check.Output)
	}

	// The table says the same, in a terminal's words.
	out := stdout.String()
	for _, line := range []string{"pass@1 33.3% (2 of 6 runs passed)",
		"refactor-format #1 (job " + runs["refactor-format"].JobID + "): check failed (exit 1); the agent changed test/billing.test.js, package.json", "cli-flag #1 (job " + runs["cli-flag"].JobID + "): check failed (exit 2)",
		"| wordcount.py: error: unrecognized arguments: --ignore-case", "log-top-paths #1 (job " + runs["log-top-paths"].JobID + "): budget: ",
		"sqlite-report #1 (job " + runs["sqlite-report"].JobID + "): error: ", "Web UI: " + e.url() + "/evals/e2e-run-1"} {
		if !strings.Contains(out, line) {
			t.Errorf("the table lacks %q", line)
		}
	}

	// The server's records: each job carries the run, and each check ran in
	// a held follow-up of its job, cancelled once it was done.
	for id, r := range runs {
		j := e.status(r.JobID)
		if j.Metadata[drydockeval.MetaRun] != "e2e-run-1" || j.Metadata[drydockeval.MetaTask] != id || j.Metadata[drydockeval.MetaSuite] != "starter" || j.Model != "test-model" {
			t.Errorf("job of %s: metadata %v, model %q", id, j.Metadata, j.Model)
		}
		if r.Check == nil || r.Check.JobID == "" {
			continue
		}
		c, _ := e.waitTerminal(r.Check.JobID, 2*time.Minute)
		if c.Agent != drydock.AgentNone || c.ParentJobID != r.JobID || c.Metadata[drydockeval.MetaRole] != "check" || c.Status != drydock.StatusCancelled || len(c.Egress) != 0 {
			t.Errorf("check job of %s: agent %q, parent %q, metadata %v, status %s, egress %v; want a cancelled held follow-up without egress",
				id, c.Agent, c.ParentJobID, c.Metadata, c.Status, c.Egress)
		}
	}

	// The cheater's check job: its archive holds the suite's billing test
	// (put back before the check), the check's output with what the agent
	// changed at its end (where the web UI's page reads it), and nothing of
	// the guard.
	files := e.archive(runs["refactor-format"].Check.JobID)
	if log := files[drydockeval.CheckLog]; !strings.HasSuffix(log, "\n\ndrydock eval: the agent changed test/billing.test.js, package.json (the check ran on the suite's copies)\n") {
		t.Errorf("the check's saved output ends %q", log[max(0, len(log)-300):])
	}
	suiteTest, err := os.ReadFile(filepath.Join("..", "evals", "starter", "refactor-format", "workspace", "test", "billing.test.js"))
	if err != nil {
		t.Fatal(err)
	}
	if files["test/billing.test.js"] != string(suiteTest) {
		t.Errorf("the check ran on test/billing.test.js = %q; want the suite's", files["test/billing.test.js"])
	}
	for name := range files {
		if strings.Contains(name, ".drydock-eval-") {
			t.Errorf("the guard left %s in the check's workspace", name)
		}
	}

	// Running the same run id again finds the jobs it made instead of
	// making new ones.
	again := exec.Command(binary, "eval", filepath.Join("..", "evals", "starter"), "--model", "test-model", "--run-id", "e2e-run-1", "--task", "hello-txt", "--json")
	again.Env = cmd.Env
	data, err = again.Output()
	if err != nil {
		t.Fatalf("eval again: %v", err)
	}
	var rep2 drydockeval.Report
	if err := json.Unmarshal(data, &rep2); err != nil || len(rep2.Tasks) != 1 || rep2.Tasks[0].Attempts[0].JobID != runs["hello-txt"].JobID || !rep2.Tasks[0].Attempts[0].Passed {
		t.Errorf("eval again with the run id: %v %s; want hello-txt's first job, passed", err, data)
	}
}

// Every check of the starter suite (but react-todo's, whose job needs the
// npm registry) really checks, in real sandboxes on Docker, the desktop
// ones on the desktop image: each task runs twice, and the scripted model
// applies the task's reference solution (solution.sh) in one run and does
// nothing in the other. The check must pass the first and fail the second,
// so every task scores 1 of 2: pass@1 50%, pass@2 100%.
func TestEvalStarterChecksTellSolvedFromUntouched(t *testing.T) {
	t.Parallel()
	if os.Getenv("DRYDOCK_TEST_E2E") == "" {
		t.Skip("DRYDOCK_TEST_E2E not set: this test runs two dozen real sandboxes (make test sets it)")
	}
	suite, err := drydockeval.Load(filepath.Join("..", "evals", "starter"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		solved = map[string]bool{} // tasks whose solution has been handed out
	)
	plays := map[string]func(int) llmtest.Turn{}
	var ids []string
	for _, task := range suite.Tasks {
		if task.ID == "react-todo" {
			continue
		}
		solution, err := os.ReadFile(filepath.Join("..", "evals", "starter", task.ID, "solution.sh"))
		if err != nil {
			t.Fatal(err)
		}
		id := task.ID
		ids = append(ids, id)
		plays[id] = func(step int) llmtest.Turn {
			if step > 0 {
				return finish("Done.")
			}
			mu.Lock()
			defer mu.Unlock()
			if solved[id] {
				return finish("Nothing to do.")
			}
			solved[id] = true
			return bash("cd /workspace && " + string(solution))
		}
	}
	e := newAgentEnv(t, "docker", "DRYDOCK_TEST_DOCKER_HOST", "openai", evalModel(t, plays), "--max-concurrent", "8")
	args := []string{"eval", filepath.Join("..", "evals", "starter"), "--model", "test-model", "--runs", "2", "--concurrency", "4", "--json"}
	for _, id := range ids {
		args = append(args, "--task", id)
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "DRYDOCK_URL="+e.url(), "DRYDOCK_TOKEN=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("drydock eval: %v\n%s", err, stderr.String())
	}
	var rep drydockeval.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	for _, ts := range rep.Tasks {
		if ts.Passed == 1 && ts.Runs == 2 {
			continue
		}
		t.Errorf("task %s: %d of %d runs passed; want exactly the solved one", ts.ID, ts.Passed, ts.Runs)
		for _, r := range ts.Attempts {
			out := ""
			if r.Check != nil {
				out = r.Check.Output
			}
			t.Logf("  %s #%d passed=%v %s\n%s", ts.ID, r.Attempt, r.Passed, r.Why(), out)
		}
	}
	for _, ts := range rep.Tasks {
		for _, r := range ts.Attempts {
			if !r.Passed && r.Reason != drydockeval.ReasonCheckFailed {
				t.Errorf("task %s #%d failed for %q (%s); want its check to fail", ts.ID, r.Attempt, r.Reason, r.Why())
			}
		}
	}
	if len(rep.Tasks) != len(ids) || rep.Total.PassAt1 != 0.5 || rep.Total.PassAtN != 1 {
		t.Errorf("%d tasks, pass@1 %v, pass@2 %v; want %d, 0.5, 1", len(rep.Tasks), rep.Total.PassAt1, rep.Total.PassAtN, len(ids))
	}
}

// react-todo, the starter task that needs the network, scored for real: its
// job gets the server's --egress-default (the npm registry this machine
// reaches, as make run sets it; the suite names no registry), the scripted
// model scaffolds the app with create-vite, adds the todo components and
// tests of testdata/react-todo, installs the packages and sets "npm test",
// and the check, offline in a fresh sandbox, runs the tests and the build on
// the node_modules the job left.
func TestEvalReactTodoFromTheRegistry(t *testing.T) {
	t.Parallel()
	if os.Getenv("DRYDOCK_TEST_E2E") == "" {
		t.Skip("DRYDOCK_TEST_E2E not set: this test downloads packages from the npm registry (make test sets it)")
	}
	if os.Getenv("DRYDOCK_TEST_DOCKER_HOST") == "" {
		t.Skip("DRYDOCK_TEST_DOCKER_HOST not set: no Docker engine to run sandboxes on (make test starts one)")
	}
	reg := hostNPMRegistry(t)
	creates := reactTodoFiles(t)
	setup := fmt.Sprintf("export npm_config_registry=%s npm_config_cache=/tmp/npm-cache npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false; ",
		shellQuote(reg.url))
	plays := map[string]func(int) llmtest.Turn{"react-todo": func(step int) llmtest.Turn {
		switch step {
		case 0:
			return bash(setup + "cd /workspace && npm create -y vite@" + createViteVersion + " todo-app -- --template react-ts --no-interactive </dev/null && " +
				"cd todo-app && rm -r src/App.tsx src/App.css src/index.css src/assets && ls src")
		case 1:
			return llmtest.Turn{ToolCalls: creates}
		case 2:
			in, _ := json.Marshal(map[string]any{"command": "cd /workspace/todo-app && npm install && npm install -D vitest@" + vitestVersion + " jsdom@" + jsdomVersion +
				` && npm pkg set scripts.test="vitest run" && echo INSTALLED`, "timeout": 600})
			return llmtest.Turn{ToolCalls: []llm.ToolCall{llmtest.Call("bash", string(in))}}
		}
		return finish("todo-app/: React + TypeScript with Vite; npm test runs vitest, npm run build writes dist/.")
	}}
	extra := []string{"--egress-default", reg.hostPort}
	for _, a := range reg.addrs {
		extra = append(extra, "--egress-private", a)
	}
	for _, ca := range hostAddedCAs(t) {
		extra = append(extra, "--sandbox-ca", ca)
	}
	e := newAgentEnv(t, "docker", "DRYDOCK_TEST_DOCKER_HOST", "openai", evalModel(t, plays), extra...)
	cmd := exec.Command(binary, "eval", filepath.Join("..", "evals", "starter"), "--model", "test-model", "--task", "react-todo", "--json")
	cmd.Env = append(os.Environ(), "DRYDOCK_URL="+e.url(), "DRYDOCK_TOKEN=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("drydock eval: %v\n%s", err, stderr.String())
	}
	var rep drydockeval.Report
	if err := json.Unmarshal(out, &rep); err != nil || len(rep.Tasks) != 1 {
		t.Fatalf("report: %v %s", err, out)
	}
	r := rep.Tasks[0].Attempts[0]
	if !r.Passed {
		check := ""
		if r.Check != nil {
			check = r.Check.Output
		}
		t.Fatalf("react-todo failed: %s\n%s", r.Why(), check)
	}
	if !strings.Contains(r.Check.Output, "passed") || !strings.Contains(r.Check.Output, "built in") {
		t.Errorf("the check's output lacks the tests' and the build's lines:\n%s", r.Check.Output)
	}
}
