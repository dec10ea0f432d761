package oomscore_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/drydockhq/drydock/oomscore"
)

// The test binary is its own shim, as toolboxd is.
func TestMain(m *testing.M) {
	oomscore.Shim(os.Args)
	os.Exit(m.Run())
}

// A program started through the shim has the highest score from its first
// instruction on, whatever the daemon's, and keeps its arguments,
// environment and exit code; a program that does not exist still fails to
// start.
func TestShimRaisesTheScoreBeforeTheProgramRuns(t *testing.T) {
	if _, err := os.Stat("/proc/self/oom_score_adj"); err != nil {
		t.Skip("no /proc/self/oom_score_adj here")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		cmd := exec.Command("sh", "-c", `cat /proc/self/oom_score_adj; echo "$1 $DRYDOCK_SHIM_TEST"; exit 3`, "sh", "arg one")
		cmd.Env = append(os.Environ(), "DRYDOCK_SHIM_TEST=env")
		oomscore.Wrap(cmd, self)
		out, err := cmd.Output()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("exit: %v (output %q)", err, out)
		}
		if got := string(out); got != "1000\narg one env\n" {
			t.Fatalf("output %q; want the score 1000 and the arguments and environment passed on", got)
		}
	}
	cmd := exec.Command("drydock-no-such-program")
	oomscore.Wrap(cmd, self)
	if err := cmd.Start(); err == nil || !strings.Contains(err.Error(), "drydock-no-such-program") {
		t.Fatalf("a missing program started: %v", err)
	}
}
