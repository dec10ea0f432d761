package main

import (
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

func TestEgressCommand(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	j := srv.AddJob(drydock.JobSpec{Task: "t", Egress: []string{"pypi.example.com:443"}}, time.Now())
	srv.SetStatus(j.ID, drydock.StatusRunning, "")

	steps := []struct {
		args []string
		want string
	}{
		{nil, "may reach: pypi.example.com:443\n"},
		{[]string{"--allow", "*.npm.example.com:443", "--allow", "10.0.0.0/8"}, "may reach: pypi.example.com:443, *.npm.example.com:443, 10.0.0.0/8\n"},
		{[]string{"--remove", "pypi.example.com:443"}, "may reach: *.npm.example.com:443, 10.0.0.0/8\n"},
		{[]string{"--clear", "--allow", "example.com"}, "may reach: example.com\n"},
		{[]string{"--clear"}, "may reach nothing on the network.\n"},
	}
	for _, s := range steps {
		r := newRun()
		if err := r.exec(append([]string{"egress", j.ID}, s.args...)...); err != nil {
			t.Fatalf("egress %v: %v", s.args, err)
		}
		if got := r.out.String(); got != "Job "+j.ID+" "+s.want {
			t.Errorf("egress %v printed %q, want %q", s.args, got, s.want)
		}
	}
	if got := srv.Job(j.ID).Egress; len(got) != 0 {
		t.Errorf("stored list %q after --clear", got)
	}

	for _, bad := range []struct {
		args []string
		says string
	}{
		{[]string{"--allow", "bad host"}, "is not a host name"},
		{[]string{"--remove", "never.example"}, "not in the egress list"},
	} {
		r := newRun()
		err := r.exec(append([]string{"egress", j.ID}, bad.args...)...)
		if err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("egress %v: %v, want an error saying %q", bad.args, err, bad.says)
		}
	}

	// A list the job got from the server says so, until the job sets one.
	srv.SetEgressDefault(j.ID, []string{"registry.example.com:443"})
	for _, s := range []struct {
		args []string
		want string
	}{
		{nil, "may reach (the server's default): registry.example.com:443\n"},
		{[]string{"--allow", "example.com"}, "may reach: registry.example.com:443, example.com\n"},
	} {
		r := newRun()
		if err := r.exec(append([]string{"egress", j.ID}, s.args...)...); err != nil {
			t.Fatalf("egress %v: %v", s.args, err)
		}
		if got := r.out.String(); got != "Job "+j.ID+" "+s.want {
			t.Errorf("egress %v printed %q, want %q", s.args, got, s.want)
		}
	}

	srv.SetStatus(j.ID, drydock.StatusComplete, "")
	r := newRun()
	if err := r.exec("egress", j.ID, "--allow", "example.com"); err == nil || !strings.Contains(err.Error(), "can no longer change") {
		t.Errorf("finished job: %v", err)
	}
}
