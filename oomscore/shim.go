package oomscore

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// ShimArg, as the first argument of the daemon's own executable, makes it
// a shim (Shim): it raises its own score to Max and then becomes the
// program. A process may always raise its own score, and the program then
// never runs, or forks, with the daemon's score: Raise after a start
// races the program's first steps (a `cat /proc/self/oom_score_adj` run
// that way reads the daemon's score now and then).
const ShimArg = "--drydock-oom-max-exec"

// Wrap makes cmd start through self (the daemon's executable, which calls
// Shim first thing in main). A command whose program was not found is left
// as it is, so that its Start still says so.
func Wrap(cmd *exec.Cmd, self string) {
	if self == "" || cmd.Err != nil || cmd.Path == "" {
		return
	}
	cmd.Args = append([]string{self, ShimArg, cmd.Path}, cmd.Args...)
	cmd.Path = self
}

// Shim runs when args (os.Args) are a wrapped command's: it raises its own
// score and execs the program, and exits 127 when it cannot. Otherwise it
// returns at once.
func Shim(args []string) {
	if len(args) < 4 || args[1] != ShimArg {
		return
	}
	path, argv := args[2], args[3:]
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte(strconv.Itoa(Max)), 0); err != nil {
		// The program still works; it keeps the daemon's score.
		fmt.Fprintln(os.Stderr, "warning: raise the OOM score:", err)
	}
	err := syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "%s: %v\n", argv[0], err)
	os.Exit(127)
}
