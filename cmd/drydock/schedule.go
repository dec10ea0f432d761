package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
)

// ScheduleCmd submits a task and optionally follows or waits for it.
type ScheduleCmd struct {
	Task       string            `arg:"" optional:"" help:"What the agent should do, or - to read it from standard input (none with --agent none)."`
	Agent      string            `placeholder:"none" help:"none: no agent; the sandbox is held for you until --timeout or drydock cancel, for drydock exec and drydock put (default: the server's agent)."`
	Model      string            `help:"Model to use (default: the server's)."`
	MaxSteps   int               `name:"max-steps" help:"Most agent steps (default: the server's)."`
	Timeout    time.Duration     `help:"Wall-time limit, e.g. 15m or 2h (default: the server's)."`
	Profile    string            `help:"Sandbox profile: headless, or desktop for a screen the agent can see and you can watch (default: the server's)."`
	Budget     int               `name:"context-budget" placeholder:"TOKENS" help:"Most tokens of each prompt the agent sends (4000 to 1000000; default: the model's context window)."`
	Meta       map[string]string `help:"Metadata to attach, KEY=VALUE; repeatable." placeholder:"KEY=VALUE" mapsep:"none"`
	Egress     []string          `placeholder:"HOST[:PORT]" xor:"egress" help:"A destination the sandbox may reach, e.g. registry.example.com:443 or *.github.com:443; repeatable. Default: the server's --egress-default (often none). Change it while the job runs with drydock egress."`
	NoEgress   bool              `name:"no-egress" xor:"egress" help:"The sandbox may reach nothing on the network, whatever the server's --egress-default."`
	Secrets    SecretFlags       `embed:""`
	Repo       RepoFlags         `embed:""`
	Follow     bool              `short:"f" xor:"mode" help:"Show progress live until the job ends; exit 1 if it fails or is cancelled. Ctrl-C stops following, not the job."`
	Wait       bool              `xor:"mode" help:"Wait silently until the job ends and print its final status; exit 1 if it fails or is cancelled. With --agent none: wait until the sandbox is ready, then print the job id."`
	JSON       bool              `name:"json" help:"Print JSON (with --follow: one line per event, between the job as scheduled and as finished)."`
	Workspace  string            `placeholder:"DIR|FILE" help:"Start the job from these files: a directory is packed as it is sent (tar.gz; what its .gitignore files name and .git are left out), a FILE (tar, tar.gz or zip) is sent as it is."`
	IncludeGit bool              `name:"include-git" help:"With a --workspace directory, pack its .git directory too (the history, for an agent that should use git)."`
	Key        string            `name:"idempotency-key" placeholder:"KEY" help:"Send KEY as the request's Idempotency-Key (1 to 255 printable ASCII characters; default: a random one). Running the command again with the same KEY within the server's key lifetime (24 h by default) returns the job the first run created instead of creating a second; for scripts that retry."`

	// Questions from the agent, answered with drydock message.
	Interactive bool `help:"Offer the agent the ask_user tool: it may ask you a question (drydock status shows it) and waits for your answer (drydock message) up to the server's --ask-timeout."`
}

func (c *ScheduleCmd) spec(g *Globals) (drydock.JobSpec, error) {
	task := c.Task
	if task == "-" {
		b, err := io.ReadAll(io.LimitReader(g.in(), drydock.MaxTaskBytes+1))
		if err != nil {
			return drydock.JobSpec{}, fmt.Errorf("read the task from standard input: %w", err)
		}
		task = string(b)
	}
	if task == "" && c.Agent != drydock.AgentNone {
		return drydock.JobSpec{}, fmt.Errorf("a task is required: drydock schedule \"what the agent should do\" (or --agent none for a sandbox held for you)")
	}
	s := drydock.JobSpec{
		Task:     task,
		Agent:    c.Agent,
		Model:    c.Model,
		MaxSteps: c.MaxSteps,
		Timeout:  drydock.Duration(c.Timeout),
		Profile:  drydock.Profile(c.Profile),
		Metadata: c.Meta,
		Egress:   c.Egress,

		ContextBudget: c.Budget,
		Interactive:   c.Interactive,
	}
	if c.NoEgress {
		s.Egress = []string{} // sent as [], which the server's default does not replace
	}
	secrets, err := c.Secrets.values(os.LookupEnv)
	if err != nil {
		return s, err
	}
	s.Secrets = secrets
	if s.Repo, err = c.Repo.spec(); err != nil {
		return s, err
	}
	s.Normalize()
	// The server checks too; checking here saves a round trip and gives the
	// same message.
	if err := s.Validate(); err != nil {
		return s, fmt.Errorf("%s", drydock.ErrorMessage(err))
	}
	return s, nil
}

func (c *ScheduleCmd) Run(g *Globals) error {
	spec, err := c.spec(g)
	if err != nil {
		return err
	}
	key, err := idempotencyKey(c.Key)
	if err != nil {
		return err
	}
	ctx, interrupted, stop := g.signalContext()
	defer stop()
	opts := []client.ScheduleOption{client.WithIdempotencyKey(key)}
	if c.Workspace != "" {
		open, err := c.workspace(g)
		if err != nil {
			return err
		}
		opts = append(opts, client.WithWorkspace(open))
	}
	cl := g.Client()
	j, err := cl.Schedule(ctx, spec, opts...)
	if err != nil {
		var se *client.ScheduleError
		switch {
		case interrupted():
			return fmt.Errorf("interrupted while scheduling; the server may have created the job: run the command again with --idempotency-key %s to get it (this cannot create a second job)", shellWord(key))
		case errors.As(err, &se):
			return fmt.Errorf("%v; no answer after %d attempts, so the job may or may not exist: running the command again with --idempotency-key %s is safe (it returns the job if it was created, and creates it otherwise)",
				g.explain(se.Err, ""), se.Attempts, shellWord(key))
		}
		return g.explain(err, "")
	}
	return created{g: g, cl: cl, job: j, follow: c.Follow, wait: c.Wait, json: c.JSON, interrupted: interrupted,
		header: func(p *eventPrinter, out io.Writer) {
			fmt.Fprintf(out, "Scheduled job %s  (%s)\n", ansi(p.color, bold, safe(j.ID)), safe(j.StatusURL))
			if j.VNCURL != "" {
				fmt.Fprintf(out, "Desktop: %s\n", safe(j.VNCURL))
			}
		},
		footer: scheduleFooter(j),
	}.report(ctx)
}

// scheduleFooter tells the person at the terminal what to do next.
func scheduleFooter(j *drydock.Job) string {
	if j.Agent == drydock.AgentNone {
		return fmt.Sprintf("Status: %s\nHeld for you until its timeout or: drydock cancel %s\nRun: drydock exec %s -- COMMAND\nWrite: drydock put %s PATH < FILE\n",
			safe(j.StatusURL), cmdWord(j.ID), cmdWord(j.ID), cmdWord(j.ID))
	}
	return fmt.Sprintf("Status: %s\nFollow: drydock logs %s -f\n", safe(j.StatusURL), cmdWord(j.ID))
}

// created is a job just created by schedule or follow-up, and how to show
// it: followed (--follow), waited for (--wait), or its id alone on
// standard output, so that id=$(drydock schedule ...) works, with the rest
// for the person at the terminal (footer, on standard error).
type created struct {
	g                  *Globals
	cl                 *client.Client
	job                *drydock.Job
	follow, wait, json bool
	interrupted        func() bool
	header             func(p *eventPrinter, out io.Writer)
	footer             string
}

func (c created) report(ctx context.Context) error {
	g, cl, j := c.g, c.cl, c.job
	out, errw := g.out(), g.errw()
	switch {
	case c.follow:
		p := newEventPrinter(g, c.json)
		if c.json {
			if err := writeJSON(out, j); err != nil {
				return err
			}
		} else {
			c.header(p, out)
		}
		final, err := follow(ctx, g, cl, j.ID, 0, p, c.interrupted)
		if err != nil || final == nil {
			return err
		}
		if c.json {
			err = writeJSON(out, final)
		} else {
			p.final(final)
		}
		if err != nil {
			return err
		}
		return failed(final)
	case c.wait && j.Agent == drydock.AgentNone:
		// A held sandbox ends only at its timeout: waiting for its end would
		// wait for the whole hold, so --wait waits until it is ready.
		return c.waitHeld(ctx)
	case c.wait:
		final, err := cl.Wait(ctx, j.ID)
		if err != nil {
			if c.interrupted() {
				fmt.Fprintf(errw, "\nStopped waiting; job %s keeps running. Check it with: drydock status %s\n", safe(j.ID), cmdWord(j.ID))
				return nil
			}
			return g.explain(err, j.ID)
		}
		if c.json {
			err = writeJSON(out, final)
		} else {
			err = printStatus(out, final, g.colorful(out), time.Now())
		}
		if err != nil {
			return err
		}
		return failed(final)
	}
	if c.json {
		return writeJSON(out, j)
	}
	fmt.Fprintln(out, safe(j.ID))
	fmt.Fprint(errw, c.footer)
	return nil
}

// errHeldReady stops the event stream once the held sandbox is ready.
var errHeldReady = errors.New("held sandbox ready")

// waitHeld waits until the runner says the held sandbox is ready (its
// sandbox_held event): before that, commands and writes are refused with
// 503 "still creating its sandbox".
func (c created) waitHeld(ctx context.Context) error {
	g, cl, j := c.g, c.cl, c.job
	err := cl.StreamEvents(ctx, j.ID, 0, func(e *drydock.Event) error {
		if drydock.LogKind(e) == drydock.LogSandboxHeld {
			return errHeldReady
		}
		return nil
	})
	switch {
	case errors.Is(err, errHeldReady):
	case c.interrupted():
		fmt.Fprintf(g.errw(), "\nStopped waiting; job %s keeps preparing its sandbox. Check it with: drydock status %s\n", safe(j.ID), cmdWord(j.ID))
		return nil
	case err != nil:
		return g.explain(err, j.ID)
	default:
		// The stream ended with the job: it never became ready.
		final, err := cl.Job(ctx, j.ID)
		if err != nil {
			return g.explain(err, j.ID)
		}
		if final.Error != "" {
			return fmt.Errorf("job %s ended %s before its sandbox was ready: %s", safe(j.ID), final.Status, safe(final.Error))
		}
		return fmt.Errorf("job %s ended %s before its sandbox was ready", safe(j.ID), final.Status)
	}
	if c.json {
		ready, err := cl.Job(ctx, j.ID)
		if err != nil {
			return g.explain(err, j.ID)
		}
		return writeJSON(g.out(), ready)
	}
	fmt.Fprintln(g.out(), safe(j.ID))
	fmt.Fprint(g.errw(), "The sandbox is ready.\n"+c.footer)
	return nil
}

// workspace checks --workspace and returns what sends it: the file as it
// is, or the directory packed on the fly.
func (c *ScheduleCmd) workspace(g *Globals) (func() (io.ReadCloser, error), error) {
	fi, err := os.Stat(c.Workspace)
	if err != nil {
		return nil, fmt.Errorf("--workspace: %w", err)
	}
	if !fi.IsDir() {
		if c.IncludeGit {
			return nil, fmt.Errorf("--include-git applies to a --workspace directory, not to an archive file")
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("--workspace %s is neither a directory nor a file", safe(c.Workspace))
		}
		return client.WorkspaceFile(c.Workspace), nil
	}
	errw := g.errw()
	opt := client.PackOptions{IncludeGit: c.IncludeGit, Skipped: func(rel string, mode fs.FileMode) {
		fmt.Fprintf(errw, "warning: %s left out of the workspace: a %s is not a file, directory or link\n", safe(rel), mode.Type())
	}}
	return client.WorkspaceDir(c.Workspace, opt), nil
}

// shellWord quotes s for a POSIX shell when it needs quoting.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// failed is the command's error for a job that ended badly, so scripts see a
// non-zero exit status.
func failed(j *drydock.Job) error {
	switch j.Status {
	case drydock.StatusError:
		return fmt.Errorf("job %s failed", safe(j.ID))
	case drydock.StatusCancelled:
		return fmt.Errorf("job %s was cancelled", safe(j.ID))
	}
	return nil
}

// idempotencyKey is --idempotency-key, or a new key. The CLI, not the SDK,
// chooses it, so that every message about an unknown outcome can name it.
func idempotencyKey(flag string) (string, error) {
	if flag == "" {
		return client.NewIdempotencyKey(), nil
	}
	if err := drydock.CheckIdempotencyKey(flag); err != nil {
		return "", fmt.Errorf("--idempotency-key: %s", drydock.ErrorMessage(err))
	}
	return flag, nil
}
