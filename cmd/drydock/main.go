// Command drydock is the Drydock orchestrator (drydock server), its CLI
// client (schedule, status, logs, download, cancel, jobs), the token admin,
// and the sandbox image builder. Each subcommand lives in its own file.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/alecthomas/kong"

	"github.com/drydockhq/drydock/termtext"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

type cli struct {
	Globals

	Server   ServerCmd   `cmd:"" help:"Run the orchestrator (HTTP API, job queue, sandboxes)."`
	Schedule ScheduleCmd `cmd:"" help:"Schedule a task."`
	Status   StatusCmd   `cmd:"" help:"Show a job's status."`
	Logs     LogsCmd     `cmd:"" help:"Show a job's events."`
	Download DownloadCmd `cmd:"" help:"Download a job's workspace archive (tar.gz by default; --format zip)."`
	Diff     DiffCmd     `cmd:"" help:"Show a job's changes to its workspace as a unified diff (git format)."`
	Cancel   CancelCmd   `cmd:"" help:"Cancel a job."`
	Message  MessageCmd  `cmd:"" help:"Send a message to a pending or running job's agent; it reads it before its next step."`
	FollowUp FollowUpCmd `cmd:"" name:"follow-up" help:"Continue a finished job: a new job from its workspace and conversation, with a new message."`
	Pause    PauseCmd    `cmd:"" help:"Pause a job: its agent makes no model call and runs no tool until resumed."`
	Resume   ResumeCmd   `cmd:"" help:"Resume a paused job."`
	Egress   EgressCmd   `cmd:"" help:"Show or change what a job's sandbox may reach on the network."`
	Jobs     JobsCmd     `cmd:"" help:"List jobs."`
	Exec     ExecCmd     `cmd:"" help:"Run a command in a sandbox held for you (a job scheduled with --agent none); exits with the command's status."`
	Put      PutCmd      `cmd:"" help:"Write a file into a sandbox held for you (a job scheduled with --agent none) from a local file or standard input."`
	MCP      MCPCmd      `cmd:"" name:"mcp" help:"Serve the Model Context Protocol on stdio for an MCP client (Claude Code, Cursor, VS Code), as a client of the server at --url."`
	Token    TokenCmd    `cmd:"" help:"Manage API tokens (works on the server's data directory)."`
	Image    ImageCmd    `cmd:"" help:"Build sandbox images."`
	Eval     EvalCmd     `cmd:"" help:"Score a model on a suite of tasks: each task as a job, its check run in the finished workspace (pass@1, pass@N, steps, tokens, cost)."`
	Replay   ReplayCmd   `cmd:"" help:"Re-run a recorded job's tool calls in a fresh sandbox and compare the results (debugging)."`
	Bench    BenchCmd    `cmd:"" help:"Measure this machine (see docs/BENCHMARKS.md)."`
	Version  VersionCmd  `cmd:"" help:"Print the version."`
}

// VersionCmd prints the build version.
type VersionCmd struct{}

func (VersionCmd) Run(g *Globals) error {
	_, err := fmt.Fprintln(g.Out, "drydock", version)
	return err
}

// defaultDataDir is where the server keeps its store and artifacts unless
// told otherwise: the XDG data directory of the user.
func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "drydock")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "drydock")
	}
	return ".drydock"
}

func main() {
	var c cli
	c.Globals.Out, c.Globals.Err = os.Stdout, os.Stderr
	ctx := kong.Parse(&c,
		kong.Name("drydock"),
		kong.Description("Drydock runs LLM coding agents in isolated sandboxes."),
		kong.UsageOnError(),
		kong.Vars{"data_dir": defaultDataDir()},
	)
	if err := ctx.Run(&c.Globals); err != nil {
		// drydock exec ends with its command's status, which said its piece.
		var st exitStatus
		if errors.As(err, &st) {
			os.Exit(int(st))
		}
		printError(os.Stderr, err)
		os.Exit(1)
	}
}

// printError shows a command's error. Errors quote the server, a sandbox, a
// file or an engine, so whatever a terminal would act on is escaped here,
// once for every command (errors.Join's lines stay lines).
func printError(w io.Writer, err error) {
	fmt.Fprintln(w, "drydock:", termtext.Text(err.Error()))
}
