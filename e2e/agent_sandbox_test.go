package e2e_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
	"github.com/drydockhq/drydock/runtime/docker"
)

// The end-to-end tests of the agent: the real binary runs the LLM
// agent with the production SDK clients against the scripted model server,
// and the model's tool calls act in a real sandbox on a real container
// engine. Each test checks what the job produced and what the model was told
// in return, in order.

// agentEnv is a server running the LLM agent on one engine, and the model
// it talks to.
type agentEnv struct {
	*server
	model  *llmtest.Server
	host   string // the engine's API socket
	engine string
}

// newAgentEnv starts the scripted model with turns and a server whose agent
// talks to it through provider's SDK, with sandboxes on the engine named by
// engineEnv. It skips when that engine is not set up.
func newAgentEnv(t *testing.T, engine, engineEnv, provider string, opts llmtest.Options, extra ...string) *agentEnv {
	t.Helper()
	host := os.Getenv(engineEnv)
	if host == "" {
		t.Skipf("%s not set: no %s engine to run sandboxes on (make test starts one)", engineEnv, engine)
	}
	headless := os.Getenv("DRYDOCK_TEST_IMAGE_HEADLESS")
	if headless == "" {
		headless = "drydock-sandbox:headless"
	}
	desktop := os.Getenv("DRYDOCK_TEST_IMAGE_DESKTOP")
	if desktop == "" {
		desktop = "drydock-sandbox:desktop"
	}
	const key = "sk-e2e-agent-sandbox-0123456789"
	opts.APIKey = key
	model := llmtest.NewServer(t, opts)
	node := "e2e-agent-" + engine + "-" + strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	s := newServer(t, "--node-id", node)
	t.Cleanup(func() { destroyByServer(t, host, node) })
	for i, a := range s.args {
		switch {
		case a == "fake" && s.args[i-1] == "--agent":
			s.args[i] = "llm"
		case a == "local" && s.args[i-1] == "--runtime":
			s.args[i] = "docker"
		}
	}
	s.args = append(s.args, "--docker-host", host, "--image-headless", headless, "--image-desktop", desktop,
		"--llm", provider, "--model", "test-model")
	s.args = append(s.args, extra...)
	s.env = []string{"OPENAI_API_KEY=", "OPENAI_BASE_URL=", "ANTHROPIC_API_KEY=", "ANTHROPIC_BASE_URL=", "ANTHROPIC_AUTH_TOKEN="}
	if provider == "openai" {
		s.env = append(s.env, "OPENAI_API_KEY="+key, "OPENAI_BASE_URL="+model.OpenAIBaseURL())
	} else {
		s.env = append(s.env, "ANTHROPIC_API_KEY="+key, "ANTHROPIC_BASE_URL="+model.AnthropicBaseURL())
	}
	s.start()
	return &agentEnv{server: s, model: model, host: host, engine: engine}
}

// run schedules a job and waits for its end.
func (e *agentEnv) run(body string, within time.Duration) (string, *drydock.Job) {
	e.t.Helper()
	t0 := time.Now()
	id := e.schedule(body)
	j, seen := e.waitTerminal(id, within)
	e.t.Logf("%s: job %s ended %s after %s (%d steps; seen %v)", e.engine, id, j.Status, time.Since(t0).Round(time.Millisecond), j.Steps, seen)
	e.t.Cleanup(func() {
		if e.t.Failed() {
			e.t.Logf("server log:\n%s", e.logs)
		}
	})
	return id, j
}

// archive downloads a job's workspace as name → content.
func (e *agentEnv) archive(id string) map[string]string {
	e.t.Helper()
	code, data := e.do("GET", "/v1/jobs/"+id+"/artifact.tar.gz", "", "")
	if code != 200 {
		e.t.Fatalf("download %s: %d %s", id, code, data)
	}
	return tarGzFiles(e.t, data)
}

// noSandboxLeft checks that the job's sandbox is gone from the engine.
func (e *agentEnv) noSandboxLeft(id string) {
	e.t.Helper()
	rt, err := docker.New(docker.Options{Host: e.host})
	if err != nil {
		e.t.Fatal(err)
	}
	defer rt.Close()
	// The runner destroys the sandbox right after it records the job as
	// finished, so allow it a moment.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		left, err := rt.List(e.t.Context(), map[string]string{drydock.LabelJob: id})
		if err == nil && len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Errorf("sandboxes left behind for job %s: %v %v", id, left, err)
			return
		}
	}
}

// fed is what the model must find answering one of its tool calls.
type fed struct {
	contains string
	isError  bool
}

func ok(s string) fed     { return fed{contains: s} }
func failed(s string) fed { return fed{contains: s, isError: true} }

// wasFed checks that request n (1-based) answered every call of the turn
// played for request n-1, in call order, with the expected results.
func wasFed(t *testing.T, reqs []*llmtest.Request, n int, want ...fed) {
	t.Helper()
	if len(reqs) < n {
		t.Errorf("the model got %d requests, want at least %d", len(reqs), n)
		return
	}
	// Requests the model failed (llmtest faults) were retried and got no
	// answer: the calls are those of the last turn it played.
	prev := n - 2
	for prev > 0 && reqs[prev].Answer.StopReason == "" {
		prev--
	}
	calls := reqs[prev].Answer.ToolCalls
	got := reqs[n-1].LastUser().ToolResults
	if len(got) != len(calls) || len(got) != len(want) {
		t.Errorf("request %d holds %d tool results for %d calls; want %d", n, len(got), len(calls), len(want))
		return
	}
	for i, r := range got {
		if r.CallID != calls[i].ID || r.Name != calls[i].Name {
			t.Errorf("request %d result %d answers %s %q, want %s %q", n, i, r.Name, r.CallID, calls[i].Name, calls[i].ID)
		}
		if !strings.Contains(r.Output, want[i].contains) || r.IsError != want[i].isError {
			t.Errorf("request %d result %d (%s): is_error=%v output %q; want is_error=%v containing %q", n, i, r.Name, r.IsError, r.Output, want[i].isError, want[i].contains)
		}
	}
}

// The seed's example, on Docker and on Podman.
func TestAgentHelloWorldInSandbox(t *testing.T) {
	t.Parallel()
	for _, eng := range engines() {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			e := newAgentEnv(t, eng.name, eng.env, "anthropic", llmtest.Options{Turns: []llmtest.Turn{
				{Text: "I'll create the file.", ToolCalls: []llm.ToolCall{
					llmtest.Call("str_replace_based_edit_tool", `{"command": "create", "path": "/workspace/hello.txt", "file_text": "hello world"}`),
				}},
				{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "cat hello.txt"}`)}},
				{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "Created hello.txt containing hello world."}`)}},
			}})
			id, j := e.run(`{"task": "Create a file named hello.txt and put the text `+"`hello world`"+` inside it."}`, 2*time.Minute)
			if j.Status != drydock.StatusComplete || j.Summary != "Created hello.txt containing hello world." || j.Steps != 3 {
				t.Fatalf("job: %s steps=%d summary=%q err=%q\n%s", j.Status, j.Steps, j.Summary, j.Error, e.logs)
			}
			if got := e.archive(id)["hello.txt"]; got != "hello world" {
				t.Errorf("hello.txt in the download = %q", got)
			}
			reqs := e.model.Requests()
			wasFed(t, reqs, 2, ok("File created successfully at: /workspace/hello.txt"))
			wasFed(t, reqs, 3, ok("hello world"))
			e.noSandboxLeft(id)
			replayHelloWorld(t, e, id)
		})
	}
}

// replayHelloWorld replays the job's recorded tool calls with `drydock
// replay` against the local runtime: the file comes back, and each call
// matches its recorded observation.
func replayHelloWorld(t *testing.T, e *agentEnv, id string) {
	t.Helper()
	code, data := e.do("GET", "/v1/jobs/"+id+"/trajectory", "", "")
	if code != 200 {
		t.Fatalf("trajectory: %d %s", code, data)
	}
	file := filepath.Join(t.TempDir(), id+".trajectory.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	t0 := time.Now()
	out, stderr, err := e.cli("replay", file, "--runtime", "local", "--data-dir", dataDir, "--keep", "--json")
	if err != nil {
		t.Fatalf("drydock replay: %v\n%s%s", err, out, stderr)
	}
	t.Logf("replayed in %s", time.Since(t0).Round(time.Millisecond))
	var r struct {
		JobID string `json:"job_id"`
		Steps []struct {
			Name   string `json:"name"`
			Result string `json:"result"`
		} `json:"steps"`
		Sandbox struct {
			Workspace string `json:"workspace"`
			Kept      bool   `json:"kept"`
		} `json:"sandbox"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("replay --json printed %q: %v", out, err)
	}
	var got []string
	for _, s := range r.Steps {
		got = append(got, s.Name+":"+s.Result)
	}
	want := []string{"str_replace_based_edit_tool:match", "bash:match", "finish:skipped"}
	if r.JobID != id || !slices.Equal(got, want) {
		t.Errorf("replay of %s: %v, want %v\n%s", r.JobID, got, want, out)
	}
	if b, err := os.ReadFile(filepath.Join(r.Sandbox.Workspace, "hello.txt")); err != nil || string(b) != "hello world" {
		t.Errorf("hello.txt after the replay: %q %v", b, err)
	}
	// The same, fetched from the server by job id, in human form; the
	// sandbox goes afterwards.
	dataDir = t.TempDir()
	out, stderr, err = e.cli("replay", "--job", id, "--runtime", "local", "--data-dir", dataDir)
	if err != nil || !strings.Contains(out, "3 calls: 2 match (0 of them after normalising), 0 differ, 1 skipped") {
		t.Errorf("drydock replay --job: %v\n%s%s", err, out, stderr)
	}
	if left, _ := os.ReadDir(filepath.Join(dataDir, "sandboxes")); len(left) != 0 {
		t.Errorf("replay left sandboxes: %v", left)
	}
}

// "Build me a todo app in React", with no network in the sandbox: the
// image has node, npm and tsc (with @types/node) but
// no npm registry and no react package. So the scripted model writes what a
// careful agent would: TSX function components and a useReducer-shaped
// reducer on a 60-line local JSX runtime (testdata/todo-app; its README says
// plainly that it is React-style, not React), type-checks both builds, and
// runs the tests with node's built-in node:test.
func TestAgentBuildsTodoAppInSandbox(t *testing.T) {
	t.Parallel()
	const root = "testdata/todo-app"
	var creates []llm.ToolCall
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		in, _ := json.Marshal(map[string]string{"command": "create", "path": "/workspace/todo-app/" + filepath.ToSlash(rel), "file_text": string(b)})
		creates = append(creates, llm.ToolCall{Name: "str_replace_based_edit_tool", Input: in})
		return nil
	})
	if err != nil || len(creates) < 8 {
		t.Fatalf("read %s: %v (%d files)", root, err, len(creates))
	}
	// The network is off: the model checks, then builds with what is there.
	turns := []llmtest.Turn{
		{Text: "Let me see what the sandbox has.", ToolCalls: []llm.ToolCall{
			llmtest.Call("bash", `{"command": "node --version && tsc --version && ls /usr/local/lib/node_modules/@types; command -v npm || echo no npm; python3 -c \"import socket; socket.create_connection(('registry.npm.example.com', 443), 3)\" 2>/dev/null && echo online || echo offline"}`),
		}},
		// Several files per turn: each call is answered, in order.
		{Text: "No registry, so no react package: I'll write React-style components on a tiny JSX runtime.", ToolCalls: creates[:len(creates)/2]},
		{ToolCalls: creates[len(creates)/2:]},
		{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "cd /workspace/todo-app && tsc -p . --noEmit && tsc -p tsconfig.browser.json --noEmit && echo TYPECHECK OK", "timeout": 300}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "cd /workspace/todo-app && tsc -p . && tsc -p tsconfig.browser.json && node --test --test-reporter=tap dist/tests/*.test.js 2>&1 | tail -n 9", "timeout": 300}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "todo-app/: React-style TSX todo app on a local JSX runtime (no npm registry here), 6 tests passing; see its README."}`)}},
	}
	e := newAgentEnv(t, "docker", "DRYDOCK_TEST_DOCKER_HOST", "openai", llmtest.Options{Turns: turns})
	id, j := e.run(`{"task": "Build me a todo app in React"}`, 4*time.Minute)
	if j.Status != drydock.StatusComplete {
		t.Fatalf("job: %s %q\n%s", j.Status, j.Error, e.logs)
	}
	reqs := e.model.Requests()
	wasFed(t, reqs, 2, ok("offline"))
	var created []fed
	for range creates[:len(creates)/2] {
		created = append(created, ok("File created successfully at: /workspace/todo-app/"))
	}
	wasFed(t, reqs, 3, created...)
	created = created[:0]
	for range creates[len(creates)/2:] {
		created = append(created, ok("File created successfully at: /workspace/todo-app/"))
	}
	wasFed(t, reqs, 4, created...)
	wasFed(t, reqs, 5, ok("TYPECHECK OK"))
	wasFed(t, reqs, 6, ok("# pass 6"))
	if out := reqs[5].LastUser().ToolResults[0].Output; !strings.Contains(out, "# fail 0") {
		t.Errorf("the tests did not all pass:\n%s", out)
	}
	// The archive is a project a person can open and run.
	files := e.archive(id)
	for _, want := range []string{"package.json", "tsconfig.json", "README.md", "index.html", "src/App.tsx", "src/todos.ts", "tests/todos.test.ts", "dist/browser/main.js", "dist/tests/todos.test.js"} {
		if _, ok := files["todo-app/"+want]; !ok {
			t.Errorf("the archive lacks todo-app/%s", want)
		}
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if err := json.Unmarshal([]byte(files["todo-app/package.json"]), &pkg); err != nil || pkg.Scripts["test"] == "" {
		t.Errorf("package.json has no test script: %v", err)
	}
	e.noSandboxLeft(id)
}

// A GUI task in the desktop profile: a terminal window opens, the computer
// tool clicks into it and types, and the screenshot the model gets next
// shows the text where the one before did not.
func TestAgentTypesInTerminalWindow(t *testing.T) {
	t.Parallel()
	for _, eng := range engines() {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			typeInTerminal(t, eng.name, eng.env)
		})
	}
}

func typeInTerminal(t *testing.T, engine, engineEnv string) {
	// xterm at 40,60 with the fixed 6x13 font: 80x24 cells are 484x316
	// pixels plus borders.
	window := image.Rect(40, 60, 530, 380)
	e := newAgentEnv(t, engine, engineEnv, "anthropic", llmtest.Options{Turns: []llmtest.Turn{
		{Text: "I'll open a terminal.", ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "export DISPLAY=:1; for i in $(seq 100); do xdotool getdisplaygeometry >/dev/null 2>&1 && break; sleep 0.2; done; xterm -T drydock-term -geometry 80x24+40+60 -bg white -fg black >/dev/null 2>&1 & for i in $(seq 100); do xdotool search --onlyvisible --class xterm >/dev/null 2>&1 && break; sleep 0.2; done; sleep 1; xdotool search --onlyvisible --class xterm >/dev/null 2>&1 && echo window open"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("computer", `{"action": "screenshot"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("computer", `{"action": "left_click", "coordinate": [280, 220]}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("computer", `{"action": "type", "text": "echo typed-in-xterm > gui-proof.txt"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("computer", `{"action": "key", "text": "Return"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "sleep 1; cat gui-proof.txt"}`)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "Typed a command into a terminal window."}`)}},
	}})
	id, j := e.run(`{"task": "Open a terminal window and type a command into it.", "profile": "desktop"}`, 3*time.Minute)
	if j.Status != drydock.StatusComplete {
		t.Fatalf("job: %s %q\n%s", j.Status, j.Error, e.logs)
	}
	reqs := e.model.Requests()
	if !slices.Contains(reqs[0].ToolNames(), "computer") {
		t.Fatalf("the desktop job offered no computer tool: %v", reqs[0].ToolNames())
	}
	wasFed(t, reqs, 2, ok("window open"))
	wasFed(t, reqs, 3, ok("Screenshot of the screen"))
	wasFed(t, reqs, 4, ok("Performed left_click."))
	wasFed(t, reqs, 5, ok("Performed type."))
	wasFed(t, reqs, 6, ok("Performed key."))
	wasFed(t, reqs, 7, ok("typed-in-xterm"))
	// The screenshots reached the model as images.
	shot := func(n int) []byte {
		t.Helper()
		rs := reqs[n-1].LastUser().ToolResults
		if len(rs) != 1 || len(rs[0].Images) != 1 || rs[0].Images[0].MediaType != "image/png" {
			t.Fatalf("request %d carries no screenshot", n)
		}
		return rs[0].Images[0].Data
	}
	beforeTyping, afterTyping := shot(4), shot(5)
	if d := changed(t, beforeTyping, afterTyping, window); d < 40 {
		t.Errorf("typing changed %d pixels of the terminal window; the text is not in the screenshot", d)
	} else {
		t.Logf("typing changed %d pixels of the terminal window", d)
	}
	if got := strings.TrimSpace(e.archive(id)["gui-proof.txt"]); got != "typed-in-xterm" {
		t.Errorf("gui-proof.txt = %q: the typed command did not run in the terminal", got)
	}
	e.noSandboxLeft(id)

	// Replayed in a fresh desktop sandbox, the GUI steps do the same: the
	// window opens and the typed command runs (screenshots are counted,
	// not compared).
	out, stderr, err := e.cli("replay", "--job", id, "--runtime", "docker", "--docker-host", e.host, "--json")
	if err != nil {
		t.Fatalf("drydock replay: %v\n%s%s", err, out, stderr)
	}
	var r struct {
		Steps []struct {
			Name, Result string
			Replayed     struct{ Images int }
		} `json:"steps"`
		Sandbox struct{ Profile string } `json:"sandbox"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Steps) != 7 || r.Sandbox.Profile != "desktop" {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	for i, s := range r.Steps[:6] {
		if s.Result != "match" || (s.Name == "computer") != (s.Replayed.Images == 1) {
			t.Errorf("replayed step %d: %+v", i+1, s)
		}
	}
}

// Python state persists across execute_code calls (two in one turn here),
// and a command that outlives its timeout is interrupted while the shell,
// its working directory and variables carry on.
func TestAgentPythonStateAndBashTimeout(t *testing.T) {
	t.Parallel()
	for _, eng := range engines() {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			e := newAgentEnv(t, eng.name, eng.env, "openai", llmtest.Options{Turns: []llmtest.Turn{
				{ToolCalls: []llm.ToolCall{
					llmtest.Call("execute_code", `{"language": "python", "code": "counter = 41\nimport os\nprint('set in', os.getcwd())"}`),
					llmtest.Call("execute_code", `{"language": "python", "code": "counter += 1\ncounter"}`),
				}},
				{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "mkdir -p /tmp/keep && cd /tmp/keep && export MARK=kept && echo ready"}`)}},
				{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "sleep 120; echo not reached", "timeout": 2}`)}},
				{ToolCalls: []llm.ToolCall{
					llmtest.Call("bash", `{"command": "echo \"$MARK in $(pwd): $((6 * 7))\""}`),
					llmtest.Call("execute_code", `{"language": "python", "code": "print(counter * 2)"}`),
				}},
				{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "Checked state."}`)}},
			}})
			t0 := time.Now()
			id, j := e.run(`{"task": "Check that state persists."}`, 3*time.Minute)
			if j.Status != drydock.StatusComplete {
				t.Fatalf("job: %s %q\n%s", j.Status, j.Error, e.logs)
			}
			if took := time.Since(t0); took > 100*time.Second {
				t.Errorf("the job took %s: the 2s timeout did not interrupt sleep 120", took)
			}
			reqs := e.model.Requests()
			wasFed(t, reqs, 2, ok("set in /workspace"), ok("42"))
			wasFed(t, reqs, 3, ok("ready"))
			wasFed(t, reqs, 4, failed("timed out after 2s and was interrupted"))
			if strings.Contains(reqs[3].LastUser().ToolResults[0].Output, "not reached") {
				t.Error("the interrupted command went on")
			}
			wasFed(t, reqs, 5, ok("kept in /tmp/keep: 42"), ok("84"))
			e.noSandboxLeft(id)

			// Replayed in a fresh sandbox on the same engine, every call
			// gives what it gave the agent, and the sandbox goes.
			t0 = time.Now()
			out, stderr, err := e.cli("replay", "--job", id, "--runtime", "docker", "--docker-host", e.host, "--json")
			if err != nil {
				t.Fatalf("drydock replay: %v\n%s%s", err, out, stderr)
			}
			t.Logf("replayed on %s in %s", eng.name, time.Since(t0).Round(time.Millisecond))
			var r struct {
				Steps   []struct{ Name, Result string } `json:"steps"`
				Match   int                             `json:"match"`
				Sandbox struct{ ID string }             `json:"sandbox"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Steps) != 7 || r.Match != 6 || r.Steps[6].Result != "skipped" {
				t.Errorf("replay: %v\n%s", err, out)
			}
			rt, err := docker.New(docker.Options{Host: e.host})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			if _, err := rt.Get(t.Context(), r.Sandbox.ID); drydock.ErrorCode(err) != drydock.ENOTFOUND {
				t.Errorf("the replay's sandbox %s is still there: %v", r.Sandbox.ID, err)
			}
		})
	}
}

// How jobs fail, and recover where they can.
func TestAgentFailurePathsInSandbox(t *testing.T) {
	t.Parallel()
	for _, eng := range engines() {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			failurePaths(t, eng.name, eng.env)
		})
	}
}

func failurePaths(t *testing.T, engine, engineEnv string) {

	t.Run("tool error then recovery", func(t *testing.T) {
		t.Parallel()
		e := newAgentEnv(t, engine, engineEnv, "anthropic", llmtest.Options{Turns: []llmtest.Turn{
			{ToolCalls: []llm.ToolCall{llmtest.Call("str_replace_based_edit_tool", `{"command": "view", "path": "/workspace/notes.md"}`)}},
			{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "cat /workspace/notes.md; ls -A /workspace"}`)}},
			{Text: "The file does not exist yet; I'll create it.", ToolCalls: []llm.ToolCall{
				llmtest.Call("str_replace_based_edit_tool", `{"command": "create", "path": "/workspace/notes.md", "file_text": "# Notes\n"}`),
			}},
			{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "Created notes.md."}`)}},
		}})
		id, j := e.run(`{"task": "Add a heading to notes.md."}`, 2*time.Minute)
		if j.Status != drydock.StatusComplete || j.Summary != "Created notes.md." {
			t.Fatalf("job: %s %q\n%s", j.Status, j.Error, e.logs)
		}
		reqs := e.model.Requests()
		wasFed(t, reqs, 2, failed("notes.md"))
		wasFed(t, reqs, 3, ok("No such file"))
		wasFed(t, reqs, 4, ok("File created successfully"))
		if got := e.archive(id)["notes.md"]; got != "# Notes\n" {
			t.Errorf("notes.md = %q", got)
		}
	})

	t.Run("step budget exhausted", func(t *testing.T) {
		t.Parallel()
		e := newAgentEnv(t, engine, engineEnv, "openai", llmtest.Options{Turns: []llmtest.Turn{
			{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "echo one >> progress.txt"}`)}},
			{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "echo two >> progress.txt"}`)}},
			{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "echo three >> progress.txt"}`)}},
		}})
		id, j := e.run(`{"task": "Count forever.", "max_steps": 2}`, 2*time.Minute)
		if j.Status != drydock.StatusError || !strings.Contains(j.Error, "all of its 2 steps") || j.Steps != 2 {
			t.Fatalf("job: %s steps=%d %q\n%s", j.Status, j.Steps, j.Error, e.logs)
		}
		if n := len(e.model.Requests()); n != 2 {
			t.Errorf("the model was asked %d times with a budget of 2 steps", n)
		}
		// The work done so far is kept.
		if got := e.archive(id)["progress.txt"]; got != "one\ntwo\n" {
			t.Errorf("progress.txt = %q", got)
		}
		e.noSandboxLeft(id)
	})

	t.Run("cancel mid-run", func(t *testing.T) {
		t.Parallel()
		e := newAgentEnv(t, engine, engineEnv, "anthropic", llmtest.Options{Turns: []llmtest.Turn{
			{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "echo draft > partial.txt"}`)}},
			{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "sleep 600", "timeout": 900}`)}},
		}})
		id := e.schedule(`{"task": "Work slowly."}`)
		// Cancel while sleep 600 runs: once its tool call is in the log.
		deadline := time.Now().Add(2 * time.Minute)
		for !sleeping(e.events(id)) {
			if time.Now().After(deadline) || e.status(id).Status.Terminal() {
				t.Fatalf("the job never reached sleep 600: %+v\n%s", e.status(id), e.logs)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t0 := time.Now()
		if code, b := e.do("POST", "/v1/jobs/"+id+"/cancel", "", ""); code != 200 && code != 202 {
			t.Fatalf("cancel: %d %s", code, b)
		}
		j, _ := e.waitTerminal(id, time.Minute)
		t.Logf("cancelled %s after the request", time.Since(t0).Round(time.Millisecond))
		if j.Status != drydock.StatusCancelled || j.DownloadURL == "" {
			t.Fatalf("job: %s download=%q %q", j.Status, j.DownloadURL, j.Error)
		}
		if got := e.archive(id)["partial.txt"]; got != "draft\n" {
			t.Errorf("partial.txt in the archive = %q", got)
		}
		e.noSandboxLeft(id)
	})

	t.Run("provider 500s then success", func(t *testing.T) {
		t.Parallel()
		fault := llmtest.Turn{Fault: llmtest.ServerError}
		e := newAgentEnv(t, engine, engineEnv, "openai", llmtest.Options{Turns: []llmtest.Turn{
			fault, fault,
			{ToolCalls: []llm.ToolCall{llmtest.Call("bash", `{"command": "echo survived > ok.txt && cat ok.txt"}`)}},
			fault, fault, fault,
			{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "Done despite the errors."}`)}},
		}})
		id, j := e.run(`{"task": "Write ok.txt."}`, 2*time.Minute)
		if j.Status != drydock.StatusComplete || j.Steps != 2 || j.Usage.InputTokens == 0 {
			t.Fatalf("job: %s steps=%d usage=%+v %q\n%s", j.Status, j.Steps, j.Usage, j.Error, e.logs)
		}
		reqs := e.model.Requests()
		if len(reqs) != 7 {
			t.Fatalf("the model got %d requests, want 7 (5 retried after a 500)", len(reqs))
		}
		// The retries repeat the same conversation; the answer after them
		// holds the tool's result.
		if !bytes.Equal(reqs[0].Body, reqs[2].Body) || !bytes.Equal(reqs[3].Body, reqs[6].Body) {
			t.Error("a retried request differs from the first attempt")
		}
		wasFed(t, reqs, 7, ok("survived"))
		if got := e.archive(id)["ok.txt"]; got != "survived\n" {
			t.Errorf("ok.txt = %q", got)
		}
	})
}

// sleeping reports whether the log shows the sleep 600 call started.
func sleeping(events []*drydock.Event) bool {
	for _, ev := range events {
		if ev.Type == drydock.EventToolCall && bytes.Contains(ev.Data, []byte("sleep 600")) {
			return true
		}
	}
	return false
}

// tarGzFiles reads the regular files of a .tar.gz as name → content.
func tarGzFiles(t *testing.T, data []byte) map[string]string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[strings.TrimPrefix(h.Name, "./")] = string(b)
		}
	}
}

// changed counts the pixels that differ between two PNGs inside r.
func changed(t *testing.T, a, b []byte, r image.Rectangle) int {
	t.Helper()
	ia, err := png.Decode(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	ib, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	r = r.Intersect(ia.Bounds()).Intersect(ib.Bounds())
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if !same(ia, ib, x, y) {
				n++
			}
		}
	}
	return n
}
