package main

import (
	"fmt"
	"strings"
	"time"
)

// ExecCmd runs a command in a sandbox held for its caller (a job scheduled
// with --agent none), as ssh runs one on a host: the words after -- are one
// bash command line, its output is printed, and its exit status is drydock's.
type ExecCmd struct {
	ID      string        `arg:"" name:"job" help:"A running job scheduled with --agent none."`
	Command []string      `arg:"" name:"command" passthrough:"" help:"The command line, after --: its words are joined with spaces and run by bash, so quote what your shell should not expand (drydock exec JOB -- 'ls *.py | wc -l')."`
	Timeout time.Duration `help:"Interrupt the command after this long (default: the server's, 2m; at most 30m)."`
	JSON    bool          `name:"json" help:"Print the result as JSON (exit code, output, whether it was cut or timed out) instead of the output, and exit 0 whatever the command's status."`
}

// Exit statuses for a command that did not end by itself, as timeout(1)
// and a shell report them.
const (
	exitTimedOut = 124
	exitKilled   = 137
)

func (c *ExecCmd) Run(g *Globals) error {
	if len(c.Command) > 0 && c.Command[0] == "--" {
		c.Command = c.Command[1:]
	}
	command := strings.Join(c.Command, " ")
	if strings.TrimSpace(command) == "" {
		return fmt.Errorf("no command: drydock exec %s -- COMMAND [ARGS...]", cmdWord(c.ID))
	}
	if c.Timeout < 0 || c.Timeout > 30*time.Minute {
		return fmt.Errorf("--timeout must be positive and at most 30m, not %s", c.Timeout)
	}
	ctx, _, stop := g.signalContext()
	defer stop()
	res, err := g.Client().RunCommand(ctx, c.ID, command, c.Timeout)
	if err != nil {
		return g.explain(err, c.ID)
	}
	if c.JSON {
		return writeJSON(g.out(), res)
	}
	// The output is the sandbox's: escaped for the terminal like every
	// other text drydock prints (package termtext), newlines and tabs kept.
	if _, err := fmt.Fprint(g.out(), safeText(res.Output)); err != nil {
		return err
	}
	errw := g.errw()
	if res.Truncated {
		fmt.Fprintf(errw, "drydock: output cut to its head and tail: %d bytes in all, saved in the sandbox at %s (drydock exec %s -- cat %s)\n",
			res.OutputBytes, safe(res.OutputPath), cmdWord(c.ID), shellWord(safe(res.OutputPath)))
	}
	if res.ShellExited {
		fmt.Fprintln(errw, "drydock: the command ended the shell; the next one starts a fresh shell in the workspace")
	}
	switch {
	case res.TimedOut:
		fmt.Fprintf(errw, "drydock: the command timed out and was interrupted (raise --timeout, up to 30m)\n")
		return exitStatus(exitTimedOut)
	case res.ExitCode < 0:
		return exitStatus(exitKilled)
	case res.ExitCode > 0:
		return exitStatus(min(res.ExitCode, 255))
	}
	return nil
}

// exitStatus is an error that sets drydock's exit status and prints nothing:
// the command's own output said what went wrong.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
