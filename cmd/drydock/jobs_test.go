package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
	"github.com/google/go-cmp/cmp"
)

func TestJobsTable(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	now := time.Now()
	a := srv.AddJob(drydock.JobSpec{Task: "Write a haiku\nabout ships"}, now.Add(-3*time.Hour))
	b := srv.AddJob(drydock.JobSpec{Task: strings.Repeat("long task ", 20)}, now.Add(-90*time.Second))
	srv.SetStatus(b.ID, drydock.StatusRunning, "")
	srv.SetProgress(b.ID, 12, drydock.Usage{CostUSD: 1.5}, "")

	r := newRun()
	if err := r.exec("jobs"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(r.out.String(), "\n"), "\n")
	want := []string{
		fmt.Sprintf("%-*s  STATUS   AGE  STEPS  COST   TASK", len(a.ID), "ID"),
		b.ID + "  running  1m   12     $1.50  " + strings.Repeat("long task ", 6)[:59] + "…",
		a.ID + "  pending  3h   0      -      Write a haiku …",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	if r.err.String() != "" {
		t.Errorf("stderr: %q", r.err.String())
	}
}

func TestJobsFilterPagesAndJSON(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	var running []string
	for i := range 7 {
		j := srv.AddJob(drydock.JobSpec{Task: fmt.Sprint("t", i)}, time.Now())
		if i != 3 {
			srv.SetStatus(j.ID, drydock.StatusRunning, "")
			running = append([]string{j.ID}, running...)
		}
	}

	r := newRun()
	if err := r.exec("jobs", "--status", "running", "-n", "4"); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(r.out.String(), "\n"); n != 5 {
		t.Errorf("one page of 4 printed %d lines:\n%s", n, r.out.String())
	}
	mustContain(t, "stderr", r.err.String(), "More jobs: drydock jobs --status running --limit 4 --cursor c4 (or --all)")

	r = newRun()
	if err := r.exec("jobs", "--status", "running", "--status", "complete", "-n", "4", "--all", "--json"); err != nil {
		t.Fatal(err)
	}
	var page client.JobPage
	if err := json.Unmarshal([]byte(r.out.String()), &page); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range page.Jobs {
		got = append(got, j.ID)
	}
	if diff := cmp.Diff(running, got); diff != "" || page.NextCursor != "" {
		t.Errorf("--all (-want +got):\n%s\ncursor %q", diff, page.NextCursor)
	}

	r = newRun()
	if err := r.exec("jobs", "--status", "cancelled"); err != nil {
		t.Fatal(err)
	}
	if r.out.String() != "" || r.err.String() != "No jobs.\n" {
		t.Errorf("no match: stdout %q stderr %q", r.out.String(), r.err.String())
	}
	r = newRun()
	if err := r.exec("jobs", "--status", "cancelled", "--json"); err != nil || r.out.String() != `{"jobs":[],"next_cursor":""}`+"\n" {
		t.Errorf("no match --json: %q, %v", r.out.String(), err)
	}
	if err := newRun().exec("jobs", "--limit", "0"); err == nil || !strings.Contains(err.Error(), "--limit must be from 1 to 500") {
		t.Errorf("--limit 0: %v", err)
	}
}
