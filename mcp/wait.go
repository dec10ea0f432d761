package mcp

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// pollEvery is how often wait_job looks at the job. It reads the job, not
// the event stream: one small request a second per waiting client, and the
// same on every transport.
const pollEvery = time.Second

// wait follows a job until it ends or the wait's timeout passes, sending a
// progress notification whenever its status or step count changes when
// the caller gave a progress token. The wait is bounded (default 50 s)
// because clients time tool calls out (the TypeScript SDK after 60 s
// unless progress resets it); a job still running is an answer, not an
// error.
func (t *tools) wait(ctx context.Context, req *sdk.CallToolRequest, in WaitArgs) (*sdk.CallToolResult, any, error) {
	id, err := jobID(in.JobID)
	if err != nil {
		return nil, nil, err
	}
	if in.Timeout < 0 || time.Duration(in.Timeout*float64(time.Second)) > MaxWait {
		return nil, nil, fmt.Errorf("wait_job %s: timeout must be between 1 and %d seconds", id, int(MaxWait.Seconds()))
	}
	if in.Until != "" && in.Until != "ready" && in.Until != "finished" {
		return nil, nil, fmt.Errorf("wait_job %s: until must be 'ready' or 'finished'", id)
	}
	limit := DefaultWait
	if in.Timeout > 0 {
		limit = time.Duration(in.Timeout * float64(time.Second))
	}
	ctx, hangUp := withRequest(ctx)
	defer hangUp()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	api := t.api(req)
	token := req.Params.GetProgressToken()
	var last string
	var seen int64 // events of a held job looked at
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		job, err := api.Job(ctx, id)
		if err != nil {
			if ctx.Err() != nil && last != "" {
				break // the wait's own timeout, mid-request
			}
			return nil, nil, failed("wait_job "+id, err)
		}
		if job.Status.Terminal() {
			return text(fmt.Sprintf("Job %s has finished (%s).\n\n%s", id, job.Status, formatJob(job))), nil, nil
		}
		// A held sandbox is what its caller waits for: the wait ends once
		// the runner says it is ready (the sandbox_held event).
		until := in.Until
		if until == "" {
			until = "finished"
			if job.NoAgent() {
				until = "ready"
			}
		}
		if until == "ready" && job.Status == drydock.StatusRunning && !job.NoAgent() {
			return text(fmt.Sprintf("Job %s is running.\n\n%s", id, formatJob(job))), nil, nil
		}
		if until == "ready" && job.NoAgent() && job.Status == drydock.StatusRunning {
			ready, err := heldReady(ctx, api, id, &seen)
			if err != nil && ctx.Err() == nil {
				return nil, nil, failed("wait_job "+id, err)
			}
			if ready {
				return text(fmt.Sprintf("Job %s is running and its sandbox is ready: use run_command and write_file on it until its timeout, or cancel_job to release it.\n\n%s", id, formatJob(job))), nil, nil
			}
		}
		if now := progressLine(job); now != last {
			last = now
			if token != nil && req.Session != nil {
				p := &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(job.Steps), Message: now}
				if job.MaxSteps > 0 {
					p.Total = float64(job.MaxSteps)
				}
				// A client that stopped listening is not the job's failure.
				_ = req.Session.NotifyProgress(ctx, p)
			}
		}
		select {
		case <-ctx.Done():
		case <-t.stop:
			return text(fmt.Sprintf("The server is shutting down; job %s goes on (%s). Call wait_job again in a moment.", id, job.Status)), nil, nil
		case <-tick.C:
			continue
		}
		break
	}
	if err := context.Cause(ctx); err != nil && err != context.DeadlineExceeded {
		return nil, nil, fmt.Errorf("wait_job %s: %v", id, err)
	}
	job, err := api.Job(context.WithoutCancel(ctx), id)
	if err != nil {
		return nil, nil, failed("wait_job "+id, err)
	}
	return text(fmt.Sprintf("Job %s is still %s after %s of waiting; call wait_job again to wait longer.\n\n%s", id, job.Status, limit, formatJob(job))), nil, nil
}

// heldReady reads a held job's events after *seen and reports whether its
// sandbox_held event is among them.
func heldReady(ctx context.Context, api *client.Client, id string, seen *int64) (bool, error) {
	for {
		page, err := api.Events(ctx, id, *seen, 500)
		if err != nil {
			return false, err
		}
		for _, e := range page.Events {
			if drydock.LogKind(e) == drydock.LogSandboxHeld {
				return true, nil
			}
		}
		*seen = page.NextAfter
		if len(page.Events) < 500 {
			return false, nil
		}
	}
}

// progressLine is what a progress notification says about a job.
func progressLine(j *drydock.Job) string {
	switch {
	case j.NoAgent() && j.Status == drydock.StatusRunning:
		return fmt.Sprintf("job %s: running, its sandbox is held for you", j.ID)
	case j.WaitingFor != "":
		return fmt.Sprintf("job %s: waiting for your answer: %s", j.ID, oneLine(j.WaitingFor, 200))
	case j.Status == drydock.StatusRunning:
		return fmt.Sprintf("job %s: running, step %d", j.ID, j.Steps)
	}
	return fmt.Sprintf("job %s: %s", j.ID, j.Status)
}

// Resources: a job's summary and its workspace files, addressed by URI
// templates, read through the same client as the tools.
const (
	jobURIPrefix     = "drydock://jobs/"
	jobTemplate      = "drydock://jobs/{job_id}"
	fileTemplate     = "drydock://jobs/{job_id}/files/{+path}"
	maxResourceBytes = MaxReadBytes
)

func (t *tools) registerResources(s *sdk.Server) {
	s.AddResourceTemplate(&sdk.ResourceTemplate{Name: "job", Title: "A Drydock job", URITemplate: jobTemplate, MIMEType: "text/plain",
		Description: "A job's status, task, cost, error and the agent's summary."}, t.readResource)
	s.AddResourceTemplate(&sdk.ResourceTemplate{Name: "workspace-file", Title: "A file of a job's workspace", URITemplate: fileTemplate,
		Description: "A file of a job's workspace (live while it runs, archived once it ended), or a directory's listing; at most 1 MiB."}, t.readResource)
}

func (t *tools) readResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	rest, ok := strings.CutPrefix(uri, jobURIPrefix)
	if !ok {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	id, path, isFile := strings.Cut(rest, "/files/")
	if _, err := jobID(id); err != nil || strings.Contains(id, "/") {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	api := t.clientFor(nil)
	if req.Extra != nil {
		api = t.clientFor(req.Extra.Header)
	}
	if !isFile {
		job, err := api.Job(ctx, id)
		if err != nil {
			return nil, failed("read "+uri, err)
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: formatJob(job)}}}, nil
	}
	p, err := url.PathUnescape(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: the path is not a valid URI path: %v", uri, err)
	}
	got, err := api.ReadPath(ctx, id, p, maxResourceBytes)
	if err != nil {
		return nil, failed("read "+uri, err)
	}
	c := &sdk.ResourceContents{URI: uri}
	switch {
	case got.Listing != nil:
		c.MIMEType, c.Text = "text/plain", formatListing(id, got.Listing)
	case got.Truncated:
		return nil, fmt.Errorf("read %s: the file is %d bytes; resources are served up to %d (use the read_file tool for a window)", uri, got.Size, maxResourceBytes)
	case isText(got.Data):
		c.MIMEType, c.Text = "text/plain", string(got.Data)
	default:
		c.MIMEType, c.Blob = "application/octet-stream", got.Data
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{c}}, nil
}

func isText(b []byte) bool {
	return strings.ToValidUTF8(string(b), "") == string(b) && !strings.ContainsRune(string(b), 0)
}
