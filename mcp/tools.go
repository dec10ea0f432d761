package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits of what a tool returns to a model, whose context is the scarce
// resource: a file is read in windows, events in pages.
const (
	DefaultReadBytes  = 64 << 10
	MaxReadBytes      = 1 << 20
	DefaultEventLimit = 50
	MaxEventLimit     = 500
	DefaultWait       = 50 * time.Second
	MaxWait           = 10 * time.Minute
	maxDiffText       = 256 << 10
)

type tools struct {
	clientFor ClientFor
	stop      <-chan struct{}
}

// api is the client acting for the caller of req.
func (t *tools) api(req *sdk.CallToolRequest) *client.Client {
	if req.Extra == nil {
		return t.clientFor(nil)
	}
	return t.clientFor(req.Extra.Header)
}

// jobID checks a job_id argument before any request.
func jobID(id string) (string, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return "", errors.New("job_id is required (the id schedule_job or list_jobs returned)")
	}
	// Ids are UUIDs; anything that could change the request's path is
	// refused here with a message about ids rather than about URLs.
	if strings.ContainsAny(id, "/\\?#% \t") || strings.Contains(id, "..") {
		return "", fmt.Errorf("job %q not found: job ids are UUIDs, as schedule_job and list_jobs return them", id)
	}
	return id, nil
}

// workspacePath checks a path argument before any request: the API
// refuses the rest ('..', NUL) with its own message.
func workspacePath(tool, id, p string) error {
	if strings.HasPrefix(p, "/") {
		return fmt.Errorf("%s %s: path %q is absolute; paths are relative to the workspace root (e.g. 'src/app.py', not '/workspace/src/app.py')", tool, id, p)
	}
	return nil
}

// failed wraps an error for the model: the API's message, never Go's
// internals (the SDK turns the error into a tool result with isError).
func failed(what string, err error) error {
	var e *drydock.Error
	if errors.As(err, &e) {
		return fmt.Errorf("%s: %s", what, e.Message)
	}
	// The client's own errors (the server cannot be reached, a foreign
	// answer) say what to do; the server's internals never reach here.
	return fmt.Errorf("%s: %v", what, err)
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// ScheduleArgs are schedule_job's arguments: the API's job fields.
type ScheduleArgs struct {
	Task          string            `json:"task,omitempty" jsonschema:"What the agent should do, in plain words (required unless agent is none). Be specific about the expected result."`
	Agent         string            `json:"agent,omitempty" jsonschema:"Omit for the server's coding agent. 'none' gives you the sandbox instead: no agent runs; use run_command and write_file on it until its timeout or cancel_job."`
	Model         string            `json:"model,omitempty" jsonschema:"The model the agent uses; omit for the server's default."`
	MaxSteps      int               `json:"max_steps,omitempty" jsonschema:"At most this many agent steps; omit for the server's default."`
	Timeout       any               `json:"timeout,omitempty" jsonschema:"How long the job may run: a duration such as '30m' or '2h', or a number of seconds; omit for the server's default. For agent none, how long the sandbox is held."`
	Profile       string            `json:"profile,omitempty" jsonschema:"'headless' (default, fastest) or 'desktop' (a display, browser and VNC)."`
	Metadata      map[string]string `json:"metadata,omitempty" jsonschema:"Labels of your own, kept with the job."`
	ContextBudget int               `json:"context_budget,omitempty" jsonschema:"Tokens per prompt for the agent (4000 to 1000000); omit for the model's default."`
	Egress        []string          `json:"egress,omitempty" jsonschema:"host[:port] destinations the sandbox may reach, e.g. ['registry.npmjs.org']; omit for the server's default (often none)."`
	Secrets       map[string]string `json:"secrets,omitempty" jsonschema:"Environment variables for the sandbox whose values are masked in everything the job returns (tokens for a repository or an API)."`
	Repo          *drydock.RepoSpec `json:"repo,omitempty" jsonschema:"A git repository to clone into the workspace first: {url, ref?, secret?, push?: {branch}}."`
	Interactive   bool              `json:"interactive,omitempty" jsonschema:"Let the agent ask a question (answer it with send_message)."`
}

// JobArgs name one job.
type JobArgs struct {
	JobID string `json:"job_id" jsonschema:"The job's id."`
}

// ListArgs select a page of jobs.
type ListArgs struct {
	Status []string `json:"status,omitempty" jsonschema:"Only jobs in these statuses: pending, running, complete, error, cancelled."`
	Limit  int      `json:"limit,omitempty" jsonschema:"Jobs per page, newest first (default 20, at most 500)."`
	Cursor string   `json:"cursor,omitempty" jsonschema:"The next_cursor of the previous page."`
}

// EventsArgs select a page of a job's events.
type EventsArgs struct {
	JobID string `json:"job_id" jsonschema:"The job's id."`
	After int64  `json:"after,omitempty" jsonschema:"Only events after this sequence number (the 'next after' of the previous page); 0 from the start."`
	Limit int    `json:"limit,omitempty" jsonschema:"Events per page (default 50, at most 500)."`
}

// PathArgs name a path of a job's workspace.
type PathArgs struct {
	JobID string `json:"job_id" jsonschema:"The job's id."`
	Path  string `json:"path,omitempty" jsonschema:"Relative to the workspace root, e.g. 'src/app.py'; empty for the root."`
}

// ReadArgs read a window of a workspace file.
type ReadArgs struct {
	JobID    string `json:"job_id" jsonschema:"The job's id."`
	Path     string `json:"path" jsonschema:"The file, relative to the workspace root, e.g. 'src/app.py'."`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"Read at most this many bytes (default 65536, at most 1048576)."`
}

// MessageArgs carry a message to a job's agent.
type MessageArgs struct {
	JobID string `json:"job_id" jsonschema:"The job's id."`
	Text  string `json:"text" jsonschema:"The message. To a running job the agent reads it before its next step; to a finished job it starts a follow-up job that continues from its workspace and conversation."`
}

// CommandArgs run a command in a held sandbox.
type CommandArgs struct {
	JobID   string  `json:"job_id" jsonschema:"The id of a running job scheduled with agent none."`
	Command string  `json:"command" jsonschema:"A bash command line. The shell persists between calls (cd, variables, background jobs); it starts in the workspace. Commands cannot read input."`
	Timeout float64 `json:"timeout,omitempty" jsonschema:"Seconds before the command is interrupted (default 120, at most 1800)."`
}

// WriteArgs write a file in a held sandbox.
type WriteArgs struct {
	JobID string `json:"job_id" jsonschema:"The id of a running job scheduled with agent none."`
	Path  string `json:"path" jsonschema:"The file, relative to the workspace root; missing directories are created."`
	Text  string `json:"text" jsonschema:"The file's whole new content."`
}

// WaitArgs wait for a job.
type WaitArgs struct {
	JobID   string  `json:"job_id" jsonschema:"The job's id."`
	Until   string  `json:"until,omitempty" jsonschema:"'finished' waits for the job's end (the default for a job with an agent); 'ready' until it runs, and for agent none until its sandbox is ready (the default for agent none)."`
	Timeout float64 `json:"timeout,omitempty" jsonschema:"Seconds to wait at most (default 50, at most 600); the job goes on after it, call wait_job again."`
}

func (t *tools) register(s *sdk.Server) {
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true}
	sdk.AddTool(s, &sdk.Tool{Name: "schedule_job", Title: "Schedule a job",
		Description: "Start a coding agent on a task in a fresh, isolated sandbox (or, with agent 'none', get the sandbox yourself). Returns the job at once, pending; follow it with wait_job, get_job or get_events."}, t.schedule)
	sdk.AddTool(s, &sdk.Tool{Name: "get_job", Title: "Get a job",
		Description: "A job's status (pending, running, complete, error, cancelled), steps, cost, error and the agent's summary.", Annotations: ro}, t.getJob)
	sdk.AddTool(s, &sdk.Tool{Name: "wait_job", Title: "Wait for a job",
		Description: "Wait until the job ends (or, for agent none, its sandbox is ready) or the timeout passes, then return its state; sends progress notifications (steps) while it runs when the call has a progress token.", Annotations: ro}, t.wait)
	sdk.AddTool(s, &sdk.Tool{Name: "list_jobs", Title: "List jobs",
		Description: "Your jobs, newest first, one line each.", Annotations: ro}, t.listJobs)
	sdk.AddTool(s, &sdk.Tool{Name: "get_events", Title: "Get a job's events",
		Description: "A page of the job's event log as compact text, one line per event: status changes, the agent's messages and tool calls, tool outputs (cut), errors, the summary. Page on with 'after'.", Annotations: ro}, t.getEvents)
	sdk.AddTool(s, &sdk.Tool{Name: "list_files", Title: "List workspace files",
		Description: "List a directory of the job's workspace: live from the sandbox while it runs, from the archive once it ended.", Annotations: ro}, t.listFiles)
	sdk.AddTool(s, &sdk.Tool{Name: "read_file", Title: "Read a workspace file",
		Description: "Read a text file of the job's workspace (live while it runs, archived once it ended); long files are cut at max_bytes.", Annotations: ro}, t.readFile)
	sdk.AddTool(s, &sdk.Tool{Name: "get_diff", Title: "Get a job's diff",
		Description: "The unified diff of what the job changed in its workspace (against the repository or upload it started from).", Annotations: ro}, t.getDiff)
	sdk.AddTool(s, &sdk.Tool{Name: "send_message", Title: "Message a job's agent",
		Description: "Send a message to the job's agent: to a running job, read before its next step; to a finished job, starts a follow-up job (returned) that continues its work."}, t.sendMessage)
	destructive := true
	sdk.AddTool(s, &sdk.Tool{Name: "cancel_job", Title: "Cancel a job",
		Description: "Stop a pending or running job; its workspace is still archived. Also releases a sandbox held with agent none.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: &destructive, IdempotentHint: true}}, t.cancel)
	sdk.AddTool(s, &sdk.Tool{Name: "run_command", Title: "Run a command in a held sandbox",
		Description: "Run a bash command in the sandbox of a running job scheduled with agent none, and return its exit code and output (capped; secrets masked)."}, t.runCommand)
	sdk.AddTool(s, &sdk.Tool{Name: "write_file", Title: "Write a file in a held sandbox",
		Description: "Create or replace a text file in the workspace of a running job scheduled with agent none."}, t.writeFile)
}

func (t *tools) schedule(ctx context.Context, req *sdk.CallToolRequest, in ScheduleArgs) (*sdk.CallToolResult, any, error) {
	spec := drydock.JobSpec{Task: in.Task, Agent: in.Agent, Model: in.Model, MaxSteps: in.MaxSteps, Profile: drydock.Profile(in.Profile),
		Metadata: in.Metadata, ContextBudget: in.ContextBudget, Egress: in.Egress, Repo: in.Repo, Interactive: in.Interactive}
	if len(in.Secrets) > 0 {
		spec.Secrets = drydock.SecretValues(in.Secrets)
	}
	switch v := in.Timeout.(type) {
	case nil:
	case float64:
		spec.Timeout = drydock.Duration(time.Duration(v * float64(time.Second)))
	case string:
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return nil, nil, fmt.Errorf("schedule_job: timeout %q is not a duration such as '30m' or '2h'", v)
		}
		spec.Timeout = drydock.Duration(d)
	default:
		return nil, nil, fmt.Errorf("schedule_job: timeout must be a duration such as '30m' or a number of seconds")
	}
	job, err := t.api(req).Schedule(ctx, spec)
	if err != nil {
		return nil, nil, failed("schedule_job", err)
	}
	next := "Follow it with wait_job or get_events."
	if job.NoAgent() {
		next = "Its sandbox is held for you once it runs: use run_command and write_file (wait_job until it is running)."
	}
	return text(fmt.Sprintf("Scheduled job %s. %s\n\n%s", job.ID, next, formatJob(job))), nil, nil
}

func (t *tools) getJob(ctx context.Context, req *sdk.CallToolRequest, in JobArgs) (*sdk.CallToolResult, any, error) {
	id, err := jobID(in.JobID)
	if err != nil {
		return nil, nil, err
	}
	job, err := t.api(req).Job(ctx, id)
	if err != nil {
		return nil, nil, failed("get_job "+id, err)
	}
	return text(formatJob(job)), nil, nil
}

func (t *tools) listJobs(ctx context.Context, req *sdk.CallToolRequest, in ListArgs) (*sdk.CallToolResult, any, error) {
	opts := client.ListOptions{Limit: in.Limit, Cursor: in.Cursor}
	if opts.Limit <= 0 {
		opts.Limit = 20
	}
	for _, s := range in.Status {
		st := drydock.JobStatus(strings.TrimSpace(s))
		if !st.Valid() {
			return nil, nil, fmt.Errorf("list_jobs: status %q is not one of pending, running, complete, error, cancelled", s)
		}
		opts.Status = append(opts.Status, st)
	}
	page, err := t.api(req).Jobs(ctx, opts)
	if err != nil {
		return nil, nil, failed("list_jobs", err)
	}
	var b strings.Builder
	if len(page.Jobs) == 0 {
		b.WriteString("No jobs.")
	}
	for _, j := range page.Jobs {
		fmt.Fprintf(&b, "%s  %-9s  %s  %s\n", j.ID, j.Status, j.CreatedAt.UTC().Format(time.RFC3339), oneLine(jobTitle(j), 100))
	}
	if page.NextCursor != "" {
		fmt.Fprintf(&b, "\nMore jobs: call list_jobs with cursor %q.", page.NextCursor)
	}
	return text(strings.TrimRight(b.String(), "\n")), nil, nil
}

func (t *tools) getEvents(ctx context.Context, req *sdk.CallToolRequest, in EventsArgs) (*sdk.CallToolResult, any, error) {
	id, err := jobID(in.JobID)
	if err != nil {
		return nil, nil, err
	}
	if in.Limit < 0 || in.Limit > MaxEventLimit || in.After < 0 {
		return nil, nil, fmt.Errorf("get_events: limit must be between 1 and %d and after not negative", MaxEventLimit)
	}
	limit := in.Limit
	if limit == 0 {
		limit = DefaultEventLimit
	}
	page, err := t.api(req).Events(ctx, id, in.After, limit)
	if err != nil {
		return nil, nil, failed("get_events "+id, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Job %s, events after #%d:\n", id, in.After)
	for _, e := range page.Events {
		b.WriteString(formatEvent(e))
		b.WriteByte('\n')
	}
	switch {
	case page.Done:
		b.WriteString("[end of the log: the job has finished]")
	case len(page.Events) == 0:
		fmt.Fprintf(&b, "[no new events yet; call get_events again with after %d]", page.NextAfter)
	default:
		fmt.Fprintf(&b, "[more may follow: call get_events with after %d]", page.NextAfter)
	}
	return text(b.String()), nil, nil
}

func (t *tools) listFiles(ctx context.Context, req *sdk.CallToolRequest, in PathArgs) (*sdk.CallToolResult, any, error) {
	id, err := jobID(in.JobID)
	if err != nil {
		return nil, nil, err
	}
	if err := workspacePath("list_files", id, in.Path); err != nil {
		return nil, nil, err
	}
	got, err := t.api(req).ReadPath(ctx, id, in.Path, 0)
	if err != nil {
		return nil, nil, failed("list_files "+id, err)
	}
	if got.Listing == nil {
		return nil, nil, fmt.Errorf("list_files %s: %s is a file, not a directory; read it with read_file", id, in.Path)
	}
	return text(formatListing(id, got.Listing)), nil, nil
}

func (t *tools) readFile(ctx context.Context, req *sdk.CallToolRequest, in ReadArgs) (*sdk.CallToolResult, any, error) {
	id, err := jobID(in.JobID)
	if err != nil {
		return nil, nil, err
	}
	if strings.TrimSpace(in.Path) == "" {
		return nil, nil, fmt.Errorf("read_file %s: path is required; list the workspace with list_files", id)
	}
	if err := workspacePath("read_file", id, in.Path); err != nil {
		return nil, nil, err
	}
	if in.MaxBytes < 0 || in.MaxBytes > MaxReadBytes {
		return nil, nil, fmt.Errorf("read_file %s: max_bytes must be between 1 and %d", id, MaxReadBytes)
	}
	limit := int64(in.MaxBytes)
	if limit == 0 {
		limit = DefaultReadBytes
	}
	got, err := t.api(req).ReadPath(ctx, id, in.Path, limit)
	if err != nil {
		return nil, nil, failed("read_file "+id, err)
	}
	if got.Listing != nil {
		return nil, nil, fmt.Errorf("read_file %s: %s is a directory; list it with list_files", id, in.Path)
	}
	if !utf8.Valid(trimPartialRune(got.Data)) {
		return text(fmt.Sprintf("Job %s, %s: a binary file of %d bytes; it is not shown as text (download the workspace to get it).", id, in.Path, got.Size)), nil, nil
	}
	head := fmt.Sprintf("Job %s, %s (%d bytes):\n", id, in.Path, got.Size)
	body := string(trimPartialRune(got.Data))
	if got.Truncated {
		body += fmt.Sprintf("\n[cut at %d of %d bytes: read it with a larger max_bytes, or in a held sandbox with run_command]", len(got.Data), got.Size)
	}
	return text(head + body), nil, nil
}

func (t *tools) getDiff(ctx context.Context, req *sdk.CallToolRequest, in JobArgs) (*sdk.CallToolResult, any, error) {
	id, err := jobID(in.JobID)
	if err != nil {
		return nil, nil, err
	}
	d, err := t.api(req).Diff(ctx, id)
	if err != nil {
		return nil, nil, failed("get_diff "+id, err)
	}
	if len(d.Patch) == 0 {
		return text(fmt.Sprintf("Job %s changed nothing in its workspace.", id)), nil, nil
	}
	patch := d.Patch
	note := ""
	if len(patch) > maxDiffText {
		patch, note = patch[:maxDiffText], fmt.Sprintf("\n[diff cut at %d bytes; read the changed files with read_file]", maxDiffText)
	} else if d.Truncated {
		note = "\n[the server cut the diff; read the changed files with read_file]"
	}
	return text(fmt.Sprintf("Job %s, diff of its workspace:\n%s%s", id, strings.ToValidUTF8(string(patch), "\uFFFD"), note)), nil, nil
}

func (t *tools) sendMessage(ctx context.Context, req *sdk.CallToolRequest, in MessageArgs) (*sdk.CallToolResult, any, error) {
	id, err := jobID(in.JobID)
	if err != nil {
		return nil, nil, err
	}
	res, err := t.api(req).SendMessage(ctx, id, in.Text)
	if err != nil {
		return nil, nil, failed("send_message "+id, err)
	}
	if res.FollowUp != nil {
		return text(fmt.Sprintf("Job %s had finished, so the message started follow-up job %s, which continues from its workspace and conversation.\n\n%s", id, res.FollowUp.ID, formatJob(res.FollowUp))), nil, nil
	}
	return text(fmt.Sprintf("Message stored for job %s (event #%d); its agent reads it before its next step.", id, res.Event.Seq)), nil, nil
}

func (t *tools) cancel(ctx context.Context, req *sdk.CallToolRequest, in JobArgs) (*sdk.CallToolResult, any, error) {
	id, err := jobID(in.JobID)
	if err != nil {
		return nil, nil, err
	}
	job, err := t.api(req).Cancel(ctx, id)
	if err != nil {
		return nil, nil, failed("cancel_job "+id, err)
	}
	msg := fmt.Sprintf("Cancel requested for job %s; it stops shortly and its workspace is archived.", id)
	if job.Status.Terminal() {
		msg = fmt.Sprintf("Job %s has ended (%s).", id, job.Status)
	}
	return text(msg + "\n\n" + formatJob(job)), nil, nil
}

func (t *tools) runCommand(ctx context.Context, req *sdk.CallToolRequest, in CommandArgs) (*sdk.CallToolResult, any, error) {
	id, err := jobID(in.JobID)
	if err != nil {
		return nil, nil, err
	}
	if in.Timeout < 0 || in.Timeout > 1800 {
		return nil, nil, fmt.Errorf("run_command %s: timeout must be between 1 and 1800 seconds", id)
	}
	stop := heartbeat(ctx, req, fmt.Sprintf("job %s: the command is running", id))
	res, err := t.api(req).RunCommand(ctx, id, in.Command, time.Duration(in.Timeout*float64(time.Second)))
	stop()
	if err != nil {
		return nil, nil, failed("run_command "+id, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Job %s: exit code %d", id, res.ExitCode)
	if res.TimedOut {
		b.WriteString(" (timed out and interrupted)")
	}
	b.WriteString("\n")
	b.WriteString(res.Output)
	if res.Truncated {
		fmt.Fprintf(&b, "\n[output cut: %d bytes in all, saved in the sandbox at %s]", res.OutputBytes, res.OutputPath)
	}
	if res.ShellExited {
		b.WriteString("\n[the shell exited; the next command starts a fresh one in the workspace]")
	}
	r := text(b.String())
	r.IsError = res.ExitCode != 0
	return r, nil, nil
}

func (t *tools) writeFile(ctx context.Context, req *sdk.CallToolRequest, in WriteArgs) (*sdk.CallToolResult, any, error) {
	id, err := jobID(in.JobID)
	if err != nil {
		return nil, nil, err
	}
	if strings.TrimSpace(in.Path) == "" {
		return nil, nil, fmt.Errorf("write_file %s: path is required", id)
	}
	if err := workspacePath("write_file", id, in.Path); err != nil {
		return nil, nil, err
	}
	res, err := t.api(req).WriteFile(ctx, id, in.Path, in.Text)
	if err != nil {
		return nil, nil, failed("write_file "+id, err)
	}
	return text(fmt.Sprintf("Job %s: wrote %s (%d bytes).", id, res.Path, res.Size)), nil, nil
}

// heartbeatEvery is how often a long call tells a client with a progress
// token that it is still at work (clients time calls out: the TypeScript
// SDK after 60 s unless progress resets the clock).
var heartbeatEvery = 15 * time.Second

// heartbeat sends progress notifications with msg and the seconds elapsed
// until the returned stop is called, when the call has a progress token.
func heartbeat(ctx context.Context, req *sdk.CallToolRequest, msg string) (stop func()) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(heartbeatEvery)
		defer tick.Stop()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			secs := float64(n) * heartbeatEvery.Seconds()
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: secs,
				Message: fmt.Sprintf("%s (%.0f s)", msg, secs)})
		}
	}()
	return func() { cancel(); <-done }
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of a
// window cut by a byte limit.
func trimPartialRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && i < len(b); i++ {
		r, size := utf8.DecodeLastRune(b[:len(b)-i])
		if r != utf8.RuneError || size > 1 {
			return b[:len(b)-i]
		}
	}
	return b
}
