package oomscore_test

import (
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/drydockhq/drydock/oomscore"
)

func TestRaiseMarksTheChildNotTheParent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("oom_score_adj is Linux only")
	}
	t.Parallel()
	before, err := oomscore.Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if err := oomscore.Raise(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if got, err := oomscore.Of(cmd.Process.Pid); err != nil || got != oomscore.Max {
		t.Fatalf("child's score %d, %v; want %d", got, err, oomscore.Max)
	}
	if got, _ := oomscore.Of(os.Getpid()); got != before {
		t.Fatalf("the parent's score changed from %d to %d", before, got)
	}
}

func TestRaiseOfAMissingProcessFails(t *testing.T) {
	t.Parallel()
	if oomscore.Raise(0) == nil || oomscore.Raise(1<<30) == nil {
		t.Fatal("Raise of a process that does not exist succeeded")
	}
}
