package server

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/drydockhq/drydock"
)

// acquireBound bounds how long a call waits for a session held by a call
// that is about to let go (a wait reporting its command's end, an interrupt
// or a restart within their grace periods). Nothing waits longer than this
// without a word.
const acquireBound = 10 * time.Second

// acquire takes the session's run lock for a call. No call queues silently
// behind another: a command finds the session busy at once, with a conflict
// that names what runs, and a wait (no command) takes over from the call
// already waiting, which returns at once with the command still running.
// That other call is often gone: an orchestrator killed mid-command leaves
// its wait holding the lock until the command ends, and its successor's
// calls would otherwise queue behind it for minutes.
func (s *session) acquire(command bool) error {
	select {
	case s.runLock <- struct{}{}:
		s.drainPreempt()
		return nil
	default:
	}
	s.mu.Lock()
	c := s.cur
	running := c != nil && !c.finished
	s.mu.Unlock()
	switch {
	case command && running:
		return s.busy(c)
	case running:
		select {
		case s.preempt <- struct{}{}:
		default:
		}
	}
	t := time.NewTimer(acquireBound)
	defer t.Stop()
	select {
	case s.runLock <- struct{}{}:
		s.drainPreempt()
		return nil
	case <-t.C:
		s.drainPreempt()
		return drydock.Errorf(drydock.ECONFLICT, "session %s is busy with another call; retry", s.id)
	}
}

// drainPreempt drops a take-over request that found no wait to end (it
// returned by itself), so that it cannot cut short the next one.
func (s *session) drainPreempt() {
	select {
	case <-s.preempt:
	default:
	}
}

// busy is the conflict of a command sent while another runs. Callers hold
// s.mu or own c.
func (s *session) busy(c *command) error {
	return drydock.Errorf(drydock.ECONFLICT,
		"a command is still running in session %s: %s, for %s; run with no command to wait for it, or interrupt it",
		s.id, quoteCommand(c.text), time.Since(c.started).Round(time.Second))
}

// quoteCommand shows a command in one short line between backticks.
func quoteCommand(text string) string {
	return "`" + clipCommand(text, 120) + "`"
}

// clipCommand is the first line of a command, cut to about n bytes (on a
// character boundary), with " ..." when something was left out.
func clipCommand(text string, n int) string {
	text = strings.TrimSpace(text)
	line, rest, multi := strings.Cut(text, "\n")
	more := multi && strings.TrimSpace(rest) != ""
	if len(line) > n {
		for n > 0 && !utf8.RuneStart(line[n]) {
			n--
		}
		line, more = line[:n], true
	}
	if more {
		line += " ..."
	}
	return line
}

// describeEnd says how a process ended, for a reply.
func describeEnd(ps *os.ProcessState) string {
	if ps == nil {
		return "ended"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("ended by signal %d (%s)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exited with status %d", ps.ExitCode())
}
