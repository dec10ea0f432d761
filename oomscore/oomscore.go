// Package oomscore marks the processes a sandbox daemon starts as the ones
// the kernel's OOM killer should take first, so that a memory bomb run by an
// agent ends the bomb (or a supervised service that is restarted), never the
// daemon that the orchestrator talks to.
//
// An unprivileged process may raise any oom_score_adj of its own uid but not
// lower one, so the daemon keeps its inherited score and its children raise
// their own before they run (Wrap and Shim: the daemon's executable is the
// shim that raises, then execs the program). Raise, after a start, is the
// fallback where no shim is configured; it races the child's first steps.
package oomscore

import (
	"fmt"
	"os"
	"strconv"
)

// Max is the highest score: the OOM killer takes such a process first.
const Max = 1000

// Raise sets the oom_score_adj of process pid to Max. It fails where there
// is no /proc (tests on other systems) or when the process is gone; callers
// log and go on, since the process works either way.
func Raise(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("oom score of pid %d: no such process", pid)
	}
	err := os.WriteFile("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", []byte(strconv.Itoa(Max)), 0)
	if err != nil {
		return fmt.Errorf("raise oom score of pid %d: %w", pid, err)
	}
	return nil
}

// Of returns the oom_score_adj of process pid.
func Of(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/oom_score_adj")
	if err != nil {
		return 0, fmt.Errorf("read oom score of pid %d: %w", pid, err)
	}
	n, err := strconv.Atoi(string(trimNL(b)))
	if err != nil {
		return 0, fmt.Errorf("oom score of pid %d: %w", pid, err)
	}
	return n, nil
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}
