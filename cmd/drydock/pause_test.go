package main

import (
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client/clienttest"
)

func TestPauseAndResumeCommands(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	running := srv.AddJob(drydock.JobSpec{Task: "r"}, time.Now())
	srv.SetStatus(running.ID, drydock.StatusRunning, "")
	done := srv.AddJob(drydock.JobSpec{Task: "d"}, time.Now())
	srv.SetStatus(done.ID, drydock.StatusComplete, "")

	r := newRun()
	err := r.exec("pause", running.ID, done.ID)
	if err == nil || !strings.Contains(err.Error(), "nothing to pause") {
		t.Errorf("error = %v; want the finished job's refusal", err)
	}
	if got := r.out.String(); !strings.HasPrefix(got, "Job "+running.ID+" is paused (by "+clienttest.FakeTokenName+" since ") || !strings.Contains(got, "Resume with: drydock resume "+running.ID) {
		t.Errorf("pause output: %q", got)
	}
	if !srv.Job(running.ID).Paused {
		t.Fatal("the job is not paused")
	}

	r = newRun()
	if err := r.exec("status", running.ID); err != nil || !strings.Contains(r.out.String(), "Paused:  yes, by "+clienttest.FakeTokenName+" (for ") {
		t.Errorf("status of a paused job: %v\n%s", err, r.out.String())
	}

	r = newRun()
	if err := r.exec("jobs"); err != nil || !strings.Contains(r.out.String(), "running (paused)") {
		t.Errorf("jobs with a paused job: %v\n%s", err, r.out.String())
	}

	r = newRun()
	if err := r.exec("resume", running.ID); err != nil || !strings.HasPrefix(r.out.String(), "Job "+running.ID+" is not paused") {
		t.Errorf("resume: %v %q", err, r.out.String())
	}
	r = newRun()
	if err := r.exec("resume", running.ID, "--json"); err != nil || strings.Contains(r.out.String(), `"paused":true`) {
		t.Errorf("resume --json: %v %s", err, r.out.String())
	}
}
