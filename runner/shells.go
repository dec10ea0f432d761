package runner

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// shellRecoveryTimeout bounds giving a recovered job its shells back: an
// interrupt's grace period and a restart each take seconds at most.
const shellRecoveryTimeout = 30 * time.Second

// maxRecoveredShells bounds the sessions recovered (and events written) for
// one sandbox, whatever its toolboxd lists: toolboxd allows 16.
const maxRecoveredShells = 16

// recoverShells gives a recovered job its shells back. A command that ran
// when the previous server stopped runs on in the sandbox, and so did
// toolboxd's wait for that server's call: the agent's next command found
// the shell busy (a `sleep 150` held it for 107 s). Each running command is
// interrupted (Ctrl-C, which keeps the shell's cwd, variables and
// background jobs) or, if it ignores that, its shell is replaced; the
// model is told which in its next prompt. A sandbox whose toolboxd cannot
// list its sessions is left as it is: the agent's calls then say that the
// shell is busy.
func (r *Runner) recoverShells(ctx context.Context, sb *drydock.Sandbox, emit *emitter, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, shellRecoveryTimeout)
	defer cancel()
	tb := r.deps.Toolbox(sb)
	sessions, err := tb.Sessions(ctx)
	if err != nil {
		log.Warn("list the sandbox's shells to recover them", "err", err)
		return
	}
	recovered := 0
	for _, s := range sessions {
		if !s.Running {
			continue
		}
		if recovered++; recovered > maxRecoveredShells {
			log.Warn("the sandbox lists more running shells than toolboxd allows; leaving the rest", "sessions", len(sessions))
			return
		}
		msg := stopCommand(ctx, tb, s, log)
		log.Info("shell recovered", "session", s.ID, "command", s.Command)
		emit.Emit(ctx, drydock.EventLog, drydock.LogEvent{Level: "warn", Message: msg, Notice: true, Session: s.ID})
	}
}

// stopCommand ends the command running in session s and says how.
func stopCommand(ctx context.Context, tb Toolbox, s toolbox.Session, log *slog.Logger) string {
	what := "a command"
	if c := strings.TrimSpace(s.Command); c != "" {
		what = "`" + clip(c, 200) + "`"
	}
	head := fmt.Sprintf("[The orchestrator restarted while %s was running in the shell", what)
	if s.ID != "agent" {
		head += fmt.Sprintf(" (session %s)", s.ID)
	}
	res, err := tb.Interrupt(ctx, s.ID)
	switch {
	case err == nil && !res.Running:
		msg := head + "; it was interrupted (Ctrl-C). The shell's working directory, variables and background jobs are kept.]"
		if out := strings.TrimSpace(res.Output); out != "" {
			msg += "\nIts last output:\n" + tail(out, 2000)
		}
		return msg
	case drydock.ErrorCode(err) == drydock.ECONFLICT:
		// It ended between the listing and the interrupt.
		return head + "; it has ended since. The shell's working directory, variables and background jobs are kept.]"
	}
	if err != nil {
		log.Warn("interrupt a recovered job's command; restarting its shell", "session", s.ID, "err", err)
	}
	if _, err := tb.RestartSession(ctx, s.ID); err != nil {
		log.Warn("restart a recovered job's shell", "session", s.ID, "err", err)
		return head + "; it could not be stopped (" + drydock.ErrorMessage(err) + "). Call bash with restart: true to get a fresh shell.]"
	}
	return head + "; it did not stop when interrupted, so the shell was replaced by a fresh one in the workspace: the working directory, variables and background jobs were lost.]"
}

// clip cuts s to at most n bytes on a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + " ..."
}

// tail keeps the last n bytes of s, on a character boundary.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return "... " + s[i:]
}
