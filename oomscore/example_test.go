package oomscore_test

import (
	"fmt"
	"os/exec"

	"github.com/drydockhq/drydock/oomscore"
)

func Example() {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		fmt.Println(err)
		return
	}
	// Mark the child before it can grow; a failure only means the child
	// keeps the daemon's score.
	_ = oomscore.Raise(cmd.Process.Pid)
	fmt.Println(cmd.Wait())
	// Output: <nil>
}
