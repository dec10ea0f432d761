package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/toolbox"
)

var bashDef = llm.Tool{
	Name:   NameBash,
	Native: &llm.NativeTool{Kind: llm.NativeBash},
	Description: `Run a command in a persistent bash shell in the sandbox. The working directory, environment variables and background jobs persist between calls; the shell starts in the workspace.
* Output (stdout and stderr together) is capped; when it is cut, the reply names a file in the workspace that holds all of it (read it with grep, head, tail or sed -n).
* A command is interrupted after ` + "`timeout`" + ` seconds (default 120). When a command prints nothing for a while the call returns early and says the command is still running: call bash with an empty command to keep waiting for it, or with restart: true to kill the shell.
* Commands cannot read input: use non-interactive flags (apt-get -y, git --no-pager, npm --yes). Start servers in the background (` + "`cmd > log 2>&1 &`" + `).
* restart: true starts a fresh shell (killing whatever runs in the old one); a command given with it runs in the new shell.`,
	InputSchema: schema(`{"type":"object","properties":{
"command":{"type":"string","description":"The bash command to run. Empty to keep waiting for a command that is still running."},
"restart":{"type":"boolean","description":"Kill the shell and start a fresh one."},
"timeout":{"type":"number","description":"Seconds before the command is interrupted (default 120, at most 3600)."}},
"required":[]}`),
}

type bash struct {
	env     *Env
	created bool
}

type bashInput struct {
	Command string  `json:"command"`
	Restart bool    `json:"restart"`
	Timeout float64 `json:"timeout"`
}

func (b *bash) run(ctx context.Context, input json.RawMessage) Result {
	var in bashInput
	if err := decode(input, &in); err != nil {
		return errorf("bash: %v", err)
	}
	timeout := b.env.BashTimeout
	if in.Timeout < 0 {
		return errorf("bash: timeout must be a positive number of seconds")
	}
	if in.Timeout > 0 {
		timeout = min(time.Duration(in.Timeout*float64(time.Second)), b.env.BashMaxTimeout)
	}
	var notes []string
	if in.Restart {
		if _, err := b.env.Box.RestartSession(ctx, b.env.Session); err != nil {
			if drydock.ErrorCode(err) != drydock.ENOTFOUND {
				return failure("bash: restart the shell", err)
			}
			if r, ok := b.ensure(ctx, true); !ok {
				return r
			}
		}
		b.created = true
		if strings.TrimSpace(in.Command) == "" {
			return Result{Output: "The shell was restarted."}
		}
		notes = append(notes, "The shell was restarted.")
	}
	if r, ok := b.ensure(ctx, false); !ok {
		return r
	}
	req := toolbox.RunRequest{
		Command:     in.Command,
		Timeout:     drydock.Duration(timeout),
		IdleTimeout: drydock.Duration(min(b.env.BashIdleTimeout, timeout)),
		MaxOutput:   b.env.MaxOutput,
	}
	if in.Timeout > 0 {
		// An explicit timeout says the command is expected to take that
		// long, silent or not.
		req.IdleTimeout = drydock.Duration(timeout)
	}
	if strings.TrimSpace(in.Command) == "" && in.Timeout == 0 {
		req.Timeout = 0 // a plain wait keeps the command's own deadline
	}
	res, err := b.env.Box.Run(ctx, b.env.Session, req)
	if drydock.ErrorCode(err) == drydock.ENOTFOUND && ctx.Err() == nil {
		// The session is gone (toolboxd restarted): start a new one.
		b.created = false
		if r, ok := b.ensure(ctx, false); !ok {
			return r
		}
		notes = append(notes, "The previous shell was lost (the sandbox service restarted); this is a fresh shell in the workspace, without the old working directory, variables or background jobs.")
		if strings.TrimSpace(in.Command) == "" {
			return Result{Output: strings.Join(notes, "\n"), IsError: true}
		}
		res, err = b.env.Box.Run(ctx, b.env.Session, req)
	}
	if err != nil {
		switch drydock.ErrorCode(err) {
		case drydock.ECONFLICT:
			return errorf("bash: %s. Call bash with an empty command to wait for it, or with restart: true to kill it.", busyText(err))
		case drydock.EINVALID:
			if strings.TrimSpace(in.Command) == "" {
				return errorf("bash: no command is running; give a command to run.")
			}
		}
		return failure("bash", err)
	}
	r := Result{Output: formatRun(res, notes, timeout), IsError: res.TimedOut}
	if res.Truncated {
		r.OutputPath = res.OutputPath
	}
	return r
}

// ensure creates the session once; an existing one (after a resume) is
// used as it is.
func (b *bash) ensure(ctx context.Context, force bool) (Result, bool) {
	if b.created && !force {
		return Result{}, true
	}
	_, err := b.env.Box.CreateSession(ctx, toolbox.SessionRequest{ID: b.env.Session})
	if err != nil && drydock.ErrorCode(err) != drydock.ECONFLICT {
		return failure("bash: start a shell", err), false
	}
	b.created = true
	return Result{}, true
}

// busyText says what keeps the shell busy: toolboxd (API 5) names the
// command and how long it has run.
func busyText(err error) string {
	msg, _, _ := strings.Cut(drydock.ErrorMessage(err), "; run with no command")
	if !strings.HasPrefix(msg, "a command is still running in session ") {
		return "a command is still running in the shell"
	}
	if _, what, ok := strings.Cut(msg, ": "); ok {
		return "a command is still running in the shell: " + what
	}
	return "a command is still running in the shell"
}

func formatRun(res *toolbox.RunResult, notes []string, timeout time.Duration) string {
	var sb strings.Builder
	if res.FreshShell {
		notes = append(notes, fmt.Sprintf("[The shell had ended since the last command (%s%s); this command ran in a fresh shell in the workspace: the old working directory, variables and background jobs are gone.]",
			res.ShellEnd, oomCause(res.OutOfMemory)))
	}
	for _, n := range notes {
		sb.WriteString(n + "\n")
	}
	sb.WriteString(res.Output)
	out := strings.TrimRight(sb.String(), "\n")
	var tail []string
	switch {
	case res.Running:
		tail = append(tail, "[The command is still running: it printed nothing more for a while. Call bash with an empty command to keep waiting, or with restart: true to kill it.]")
	case res.TimedOut:
		tail = append(tail, fmt.Sprintf("[The command timed out after %s and was interrupted. Give a larger timeout, or run it in the background.]", timeout))
	case res.Interrupted:
		tail = append(tail, "[The command was interrupted.]")
	case res.ExitCode != 0 && !(res.ShellExited && res.ExitCode < 0):
		// -1 is no status: the shell was killed, which is said below.
		tail = append(tail, fmt.Sprintf("[exit code %d]", res.ExitCode))
	}
	if o := res.OutOfMemory; o != nil {
		tail = append(tail, "["+capitalize(o.Message)+"]")
	}
	if res.ShellExited {
		end := ""
		if res.ShellEnd != "" && res.ExitCode < 0 {
			end = " (" + res.ShellEnd + oomCause(res.OutOfMemory) + ")"
		}
		tail = append(tail, "[The shell exited"+end+"; the next command starts a fresh shell in the workspace, without the old working directory, variables or background jobs.]")
	}
	if res.Truncated && res.OutputPath != "" && !strings.Contains(out, res.OutputPath) {
		tail = append(tail, fmt.Sprintf("[Output cut: %d bytes in all; the whole output is in %s]", res.OutputBytes, res.OutputPath))
	}
	if out == "" && len(tail) == 0 {
		return "(no output)"
	}
	return strings.TrimLeft(strings.Join(append([]string{out}, tail...), "\n"), "\n")
}

// oomCause adds the likely cause to a shell's end when memory ran out.
func oomCause(o *toolbox.OutOfMemory) string {
	if o == nil {
		return ""
	}
	return "; memory ran out, see below"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
