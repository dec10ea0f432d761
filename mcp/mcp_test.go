package mcp_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent/fake"
	"github.com/drydockhq/drydock/api"
	"github.com/drydockhq/drydock/artifact/local"
	"github.com/drydockhq/drydock/client"
	"github.com/drydockhq/drydock/mcp"
	"github.com/drydockhq/drydock/runner"
	localrt "github.com/drydockhq/drydock/runtime/local"
	"github.com/drydockhq/drydock/store/sqlite"
	"github.com/drydockhq/drydock/toolbox"
	"github.com/drydockhq/drydock/toolbox/hostclient"
	"github.com/drydockhq/drydock/watch"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
)

type conn struct{ *toolbox.Client }

func (c conn) WaitReady(ctx context.Context) error { return c.Client.WaitReady(ctx) }
func (c conn) DownloadTar(ctx context.Context, p string) (io.ReadCloser, error) {
	return c.Client.DownloadTar(ctx, p)
}

// bundle is a real API server (sqlite, the local runtime, the fake agent,
// a runner) and an MCP client session connected to the MCP server over the
// SDK's in-memory transport.
type bundle struct {
	url      string
	store    *watch.Store
	sqlite   *sqlite.Store
	session  *sdk.ClientSession
	mu       sync.Mutex
	progress []*sdk.ProgressNotificationParams
}

func setup(t *testing.T) *bundle { return setupWith(t, mcp.Options{Version: "test"}) }

func setupWith(t *testing.T, opts mcp.Options) *bundle {
	t.Helper()
	b := serve(t, true)
	api := client.New(b.url, "")
	server := mcp.NewServer(func(http.Header) *client.Client { return api }, opts)
	ct, st := sdk.NewInMemoryTransports()
	if _, err := server.Connect(t.Context(), st, nil); err != nil {
		t.Fatal(err)
	}
	b.session = b.connect(t, ct)
	return b
}

// connect opens a client session over transport, recording progress
// notifications.
func (b *bundle) connect(t *testing.T, transport sdk.Transport) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			b.mu.Lock()
			b.progress = append(b.progress, req.Params)
			b.mu.Unlock()
		},
	})
	session, err := c.Connect(t.Context(), transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { session.Close() })
	return session
}

// serve starts a real API server: sqlite, the local runtime, the fake
// agent and a runner; dev is development mode (no token needed).
func serve(t *testing.T, dev bool) *bundle {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rt, err := localrt.New(localrt.Options{Root: filepath.Join(dir, "sandboxes"), ServerID: "n"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	arts, err := local.New(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	pool := hostclient.NewClients()
	ws := watch.Wrap(st)
	ag := &fake.Agent{Dial: func(sb *drydock.Sandbox) fake.Workspace { return pool.Get(sb) }}
	run := runner.New(runner.Config{NodeID: "n", PollInterval: 20 * time.Millisecond, LeaseTTL: 600 * time.Millisecond}, runner.Deps{
		Store: ws, Runtime: rt, Agent: ag, Artifacts: arts,
		Toolbox: func(sb *drydock.Sandbox) runner.Toolbox { return conn{pool.Get(sb)} },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { run.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	srv := api.New(api.Config{DevMode: dev, Sandboxes: rt.Get, Toolbox: pool, Version: "test"}, ws, run, arts, prometheus.NewRegistry(), nil)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)

	return &bundle{url: hs.URL, store: ws, sqlite: st}
}

// call calls a tool and returns its text and whether it is an error
// result; a protocol error fails the test.
func (b *bundle) call(t *testing.T, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := b.session.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	return resultText(res), res.IsError
}

func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// ok calls a tool that must succeed and name the job.
func (b *bundle) ok(t *testing.T, name, id string, args map[string]any) string {
	t.Helper()
	txt, isErr := b.call(t, name, args)
	if isErr {
		t.Fatalf("%s: error result %q", name, txt)
	}
	if id != "" && !strings.Contains(txt, id) {
		t.Errorf("%s: the result does not name job %s: %q", name, id, txt)
	}
	return txt
}

var scheduled = regexp.MustCompile(`Scheduled job ([0-9a-f-]{36})`)

func (b *bundle) schedule(t *testing.T, args map[string]any) string {
	t.Helper()
	txt := b.ok(t, "schedule_job", "", args)
	m := scheduled.FindStringSubmatch(txt)
	if m == nil {
		t.Fatalf("schedule_job did not name the job: %q", txt)
	}
	return m[1]
}

// The tools a client lists are the issue's, each with a description for
// the model and an object schema with the API's field names.
func TestToolsAreListedWithSchemasAndDescriptions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.session.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*sdk.Tool{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool
	}
	needs := map[string][]string{
		"schedule_job": {"task", "agent", "timeout", "egress", "repo"}, "get_job": {"job_id"}, "list_jobs": {"status"},
		"get_events": {"job_id", "after", "limit"}, "read_file": {"job_id", "path"}, "list_files": {"job_id", "path"},
		"get_diff": {"job_id"}, "send_message": {"job_id", "text"}, "cancel_job": {"job_id"},
		"run_command": {"job_id", "command"}, "write_file": {"job_id", "path", "text"}, "wait_job": {"job_id"},
	}
	for name, fields := range needs {
		tool := got[name]
		if tool == nil {
			t.Errorf("tool %s is not listed", name)
			continue
		}
		if len(tool.Description) < 30 {
			t.Errorf("%s: description %q is too thin for a model", name, tool.Description)
		}
		schema, _ := tool.InputSchema.(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		if schema["type"] != "object" {
			t.Errorf("%s: input schema %v is not an object", name, tool.InputSchema)
		}
		for _, f := range fields {
			if _, ok := props[f]; !ok {
				t.Errorf("%s: no argument %q in %v", name, f, props)
			}
		}
	}
	init := b.session.InitializeResult()
	if init.ServerInfo.Name != "drydock" || init.Capabilities.Tools == nil || init.Capabilities.Resources == nil || init.Instructions == "" {
		t.Errorf("initialize: %+v", init)
	}
}

// A job scheduled through MCP runs with the fake agent; wait_job follows
// it to the end; its files, diff, events and resources are readable, and
// every result names the job.
func TestScheduleFollowAndReadAJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.schedule(t, map[string]any{"task": "write notes [fake:steps=2] [fake:delay=0s]"})

	params := &sdk.CallToolParams{Name: "wait_job", Arguments: map[string]any{"job_id": id, "timeout": 60}}
	params.SetProgressToken("follow-1")
	res, err := b.session.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("wait_job: %v %q", err, resultText(res))
	}
	if txt := resultText(res); !strings.Contains(txt, "has finished (complete)") || !strings.Contains(txt, "Completed 2 scripted steps") {
		t.Fatalf("wait_job: %q", txt)
	}
	b.mu.Lock()
	for _, p := range b.progress {
		if p.ProgressToken != "follow-1" || !strings.Contains(p.Message, id) {
			t.Errorf("progress notification %+v: want the call's token and the job id", p)
		}
	}
	b.mu.Unlock()

	if txt := b.ok(t, "read_file", id, map[string]any{"job_id": id, "path": "notes/step-001.md"}); !strings.Contains(txt, "# Step 1") {
		t.Errorf("read_file: %q", txt)
	}
	if txt := b.ok(t, "read_file", id, map[string]any{"job_id": id, "path": "notes/step-001.md", "max_bytes": 4}); !strings.Contains(txt, "[cut at 4 of") {
		t.Errorf("read_file with max_bytes: %q", txt)
	}
	if txt := b.ok(t, "list_files", id, map[string]any{"job_id": id}); !strings.Contains(txt, "notes/") || !strings.Contains(txt, "SUMMARY.md") {
		t.Errorf("list_files: %q", txt)
	}
	if txt := b.ok(t, "get_diff", id, map[string]any{"job_id": id}); !strings.Contains(txt, "+++ b/notes/step-002.md") {
		t.Errorf("get_diff: %q", txt)
	}
	txt := b.ok(t, "get_events", id, map[string]any{"job_id": id, "limit": 500})
	if !strings.Contains(txt, "tool_call: str_replace_based_edit_tool") || !strings.Contains(txt, "status: complete") || !strings.Contains(txt, "[end of the log") {
		t.Errorf("get_events: %q", txt)
	}
	if txt := b.ok(t, "get_events", id, map[string]any{"job_id": id, "limit": 2}); strings.Count(txt, "\n#") != 2 || !strings.Contains(txt, "call get_events with after 2") {
		t.Errorf("a page of two events: %q", txt)
	}
	if txt := b.ok(t, "list_jobs", id, nil); !strings.Contains(txt, "complete") {
		t.Errorf("list_jobs: %q", txt)
	}
	if txt := b.ok(t, "get_job", id, map[string]any{"job_id": id}); !strings.Contains(txt, "status: complete") || !strings.Contains(txt, "steps: 2") {
		t.Errorf("get_job: %q", txt)
	}

	rr, err := b.session.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: "drydock://jobs/" + id})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "status: complete") {
		t.Errorf("job resource: %v %+v", err, rr)
	}
	rr, err = b.session.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: "drydock://jobs/" + id + "/files/notes/step-002.md"})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "# Step 2") {
		t.Errorf("file resource: %v %+v", err, rr)
	}
	// A finished job's message is a follow-up, named in the result.
	if txt := b.ok(t, "send_message", id, map[string]any{"job_id": id, "text": "one more [fake:steps=1] [fake:delay=0s]"}); !strings.Contains(txt, "follow-up job") {
		t.Errorf("send_message to a finished job: %q", txt)
	}
}

// A sandbox held for the caller (agent none) takes commands and files
// through MCP until cancel_job; its secret never comes back.
func TestHeldSandboxThroughMCP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.schedule(t, map[string]any{"agent": "none", "timeout": 3600}) // seconds, as the API takes them too
	if txt := b.ok(t, "wait_job", id, map[string]any{"job_id": id, "timeout": 60}); !strings.Contains(txt, "sandbox is ready") {
		t.Fatalf("wait_job on a held sandbox: %q", txt)
	}
	b.ok(t, "write_file", id, map[string]any{"job_id": id, "path": "app/main.py", "text": "print(6*7)\n"})
	txt := b.ok(t, "run_command", id, map[string]any{"job_id": id, "command": "cd app && python3 main.py"})
	if !strings.Contains(txt, "exit code 0") || !strings.Contains(txt, "42") {
		t.Errorf("run_command: %q", txt)
	}
	// Credential-shaped output is masked, as in an agent's tool output.
	const key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"
	if txt := b.ok(t, "run_command", id, map[string]any{"job_id": id, "command": "echo ANTHROPIC_API_KEY=" + key}); strings.Contains(txt, key) || !strings.Contains(txt, "ANTHROPIC_API_KEY=[REDACTED]") {
		t.Errorf("run_command printing a key: %q; want it masked", txt)
	}
	if txt, isErr := b.call(t, "run_command", map[string]any{"job_id": id, "command": "exit 7"}); !isErr || !strings.Contains(txt, "exit code 7") {
		t.Errorf("a failing command: error=%v %q; want an error result with the exit code", isErr, txt)
	}
	if txt, isErr := b.call(t, "send_message", map[string]any{"job_id": id, "text": "hi"}); !isErr || !strings.Contains(txt, "no agent") {
		t.Errorf("send_message to a held sandbox: %v %q", isErr, txt)
	}
	b.ok(t, "cancel_job", id, map[string]any{"job_id": id})
	if txt := b.ok(t, "wait_job", id, map[string]any{"job_id": id, "until": "finished", "timeout": 60}); !strings.Contains(txt, "finished (cancelled)") {
		t.Fatalf("after cancel_job: %q", txt)
	}
	if txt := b.ok(t, "read_file", id, map[string]any{"job_id": id, "path": "app/main.py"}); !strings.Contains(txt, "print(6*7)") {
		t.Errorf("the archived workspace lacks the written file: %q", txt)
	}
}

// Bad input gets an error result with a clear message, never a crash: an
// unknown job, bad and missing arguments, path traversal, oversized
// content, tools that do not fit the job, an unknown tool.
func TestBadInputGetsClearErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agentJob := b.schedule(t, map[string]any{"task": "hang [fake:steps=0] [fake:hang]"})
	unknown := "0193aaaa-0000-7000-8000-0000000000ff"
	cases := []struct {
		name, tool string
		args       map[string]any
		want       string
	}{
		{"unknown job", "get_job", map[string]any{"job_id": unknown}, "not found"},
		{"not a job id", "get_diff", map[string]any{"job_id": "../../etc"}, "not found"},
		{"missing job_id", "get_job", map[string]any{}, "job_id"},
		{"wrong type", "get_events", map[string]any{"job_id": agentJob, "limit": "many"}, "limit"},
		{"unknown argument", "get_job", map[string]any{"job_id": agentJob, "jobid": "x"}, "jobid"},
		{"limit too high", "get_events", map[string]any{"job_id": agentJob, "limit": 100000}, "limit"},
		{"traversal", "read_file", map[string]any{"job_id": agentJob, "path": "../../etc/passwd"}, ".."},
		{"absolute path", "read_file", map[string]any{"job_id": agentJob, "path": "/etc/passwd"}, "path"},
		{"blank task", "schedule_job", map[string]any{"task": "   "}, "task is required"},
		{"bad timeout", "schedule_job", map[string]any{"task": "x", "timeout": "soon"}, "timeout"},
		{"timeout of another type", "schedule_job", map[string]any{"task": "x", "timeout": []int{1}}, "timeout"},
		{"timeout too short", "schedule_job", map[string]any{"task": "x", "timeout": 0.5}, "timeout"},
		{"bad agent", "schedule_job", map[string]any{"task": "x", "agent": "gpt"}, "agent must be"},
		{"oversized task", "schedule_job", map[string]any{"task": strings.Repeat("x", drydock.MaxTaskBytes+1)}, "limit"},
		{"oversized write", "write_file", map[string]any{"job_id": agentJob, "path": "a.txt", "text": strings.Repeat("x", 2<<20)}, "larger than"},
		{"command for an agent's sandbox", "run_command", map[string]any{"job_id": agentJob, "command": "id"}, "has an agent"},
		{"bad status filter", "list_jobs", map[string]any{"status": []string{"done"}}, "status"},
	}
	for _, c := range cases {
		txt, isErr := b.call(t, c.tool, c.args)
		if !isErr || !strings.Contains(txt, c.want) {
			t.Errorf("%s: error=%v %q; want an error result naming %q", c.name, isErr, txt, c.want)
		}
		if strings.Contains(txt, "goroutine") || strings.Contains(txt, "panic") {
			t.Errorf("%s: a Go panic reached the client: %q", c.name, txt)
		}
	}
	if _, err := b.session.CallTool(t.Context(), &sdk.CallToolParams{Name: "format_disk", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "format_disk") {
		t.Errorf("unknown tool: %v; want a protocol error naming it", err)
	}
	for _, uri := range []string{"drydock://jobs/" + unknown, "drydock://jobs/..", "drydock://jobs/../files/etc/passwd", "drydock://jobs/" + agentJob + "/files/../../x"} {
		if _, err := b.session.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: uri}); err == nil || !strings.Contains(err.Error(), "not found") && !strings.Contains(err.Error(), "..") {
			t.Errorf("resource %s: %v; want an error", uri, err)
		}
	}
}

// A server that shuts down ends its waits with an answer to call again,
// rather than holding its shutdown for up to ten minutes.
func TestWaitEndsWhenTheServerStops(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	b := setupWith(t, mcp.Options{Stop: stop})
	id := b.schedule(t, map[string]any{"task": "hang [fake:steps=0] [fake:hang]"})
	close(stop)
	if txt := b.ok(t, "wait_job", id, map[string]any{"job_id": id, "timeout": 600}); !strings.Contains(txt, "shutting down") {
		t.Errorf("wait_job while the server stops: %q", txt)
	}
}
