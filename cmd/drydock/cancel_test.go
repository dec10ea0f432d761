package main

import (
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

func TestCancelCommand(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	pending := srv.AddJob(drydock.JobSpec{Task: "p"}, time.Now())
	running := srv.AddJob(drydock.JobSpec{Task: "r"}, time.Now())
	srv.SetStatus(running.ID, drydock.StatusRunning, "")
	done := srv.AddJob(drydock.JobSpec{Task: "d"}, time.Now())
	srv.SetStatus(done.ID, drydock.StatusComplete, "")

	r := newRun()
	err := r.exec("cancel", pending.ID, "nope", running.ID, done.ID)
	if err == nil || !strings.Contains(err.Error(), "job nope not found") {
		t.Errorf("error = %v, want one for the unknown job", err)
	}
	want := "Cancelled job " + pending.ID + ".\n" +
		"Cancelling job " + running.ID + ": it stops shortly (watch with: drydock logs " + running.ID + " -f).\n" +
		"Job " + done.ID + " had already ended (complete); nothing to cancel.\n"
	if got := r.out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
	if st := srv.Job(pending.ID).Status; st != drydock.StatusCancelled {
		t.Errorf("pending job is %s after cancel", st)
	}

	r = newRun()
	if err := r.exec("cancel", running.ID, "--json"); err != nil || !strings.Contains(r.out.String(), `"status":"running"`) {
		t.Errorf("--json: %v %s", err, r.out.String())
	}
}
