package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/google/go-cmp/cmp"
)

func TestStatusCommand(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	j := srv.AddJob(drydock.JobSpec{Task: "Refactor the parser\nand add tests", Model: "m1", Profile: drydock.ProfileDesktop,
		Metadata: map[string]string{"team": "docs", "a": "1"}}, time.Now().Add(-5*time.Minute))
	srv.SetStatus(j.ID, drydock.StatusRunning, "")
	srv.SetProgress(j.ID, 4, drydock.Usage{InputTokens: 12345, OutputTokens: 678, CostUSD: 0.004}, "")

	r := newRun()
	if err := r.exec("status", j.ID); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Job:      " + j.ID + "\n",
		"Status:   running",
		"Task:     Refactor the parser …\n",
		"Model:    m1\n",
		"Profile:  desktop\n",
		"(5m ago)",
		"Steps:    4\n",
		"Usage:    12,345 in / 678 out tokens, $0.0040\n",
		"Metadata: a=1, team=docs\n",
		"Desktop:  " + srv.URL + "/jobs/" + j.ID + "/desktop\n",
	}
	mustContain(t, "status", r.out.String(), want...)
	for _, absent := range []string{"Finished:", "Error:", "Download:"} {
		if strings.Contains(r.out.String(), absent) {
			t.Errorf("status of a running job shows %q:\n%s", absent, r.out.String())
		}
	}

	srv.SetArtifact(j.ID, "tar.gz", []byte("x"))
	srv.SetStatus(j.ID, drydock.StatusError, "sandbox died\nat step 4")
	r = newRun()
	if err := r.exec("status", j.ID); err != nil {
		t.Fatalf("status of a failed job is not an error of the command: %v", err)
	}
	mustContain(t, "status", r.out.String(), "Status:   error", "Error:    sandbox died at step 4\n", "Finished:",
		"Download: drydock download "+j.ID+"  ("+srv.URL+"/v1/jobs/"+j.ID+"/artifact.tar.gz)")

	r = newRun()
	if err := r.exec("status", j.ID, "--json"); err != nil {
		t.Fatal(err)
	}
	var got drydock.Job
	if err := json.Unmarshal([]byte(r.out.String()), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(srv.Job(j.ID), &got); diff != "" {
		t.Errorf("--json (-server +printed):\n%s", diff)
	}
}
