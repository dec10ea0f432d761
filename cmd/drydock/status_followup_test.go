package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// A job of a thread names its parent and its follow-ups; a job outside
// any thread shows neither line.
func TestStatusShowsTheThread(t *testing.T) {
	t.Parallel()
	now := time.Now()
	j := &drydock.Job{ID: "0193-b", Status: drydock.StatusComplete, CreatedAt: now, ParentJobID: "0193-a",
		FollowUps: []string{"0193-c", "0193-d\x1b[2J"}, JobSpec: drydock.JobSpec{Task: "go on"}}
	var out bytes.Buffer
	if err := printStatus(&out, j, false, now); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "status", out.String(), "Follows up: 0193-a\n", "Follow-ups: 0193-c, 0193-d^[[2J\n")
	out.Reset()
	j.ParentJobID, j.FollowUps = "", nil
	if err := printStatus(&out, j, false, now); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "Follow") {
		t.Errorf("a job outside any thread shows:\n%s", out.String())
	}
}
