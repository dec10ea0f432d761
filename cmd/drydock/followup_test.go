package main

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
	"github.com/drydockhq/drydock/artifact/local"
	"github.com/drydockhq/drydock/store/sqlite"
	"github.com/drydockhq/drydock/watch"
)

type noQueue struct{}

func (noQueue) Notify()       {}
func (noQueue) Cancel(string) {}

// followUpCLI holds the follow-up command the way main's cli struct does.
type followUpCLI struct {
	Globals
	FollowUp FollowUpCmd `cmd:"" name:"follow-up"`
}

// drydock follow-up against a real API server: it prints the new job's
// id, which names its parent and carries the flags' overrides; what the
// server refuses is said, and contradicting flags are refused before any
// request.
func TestFollowUpCommand(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ws := watch.Wrap(st)
	arts, err := local.New(filepath.Join(t.TempDir(), "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(api.New(api.Config{DevMode: true}, ws, noQueue{}, arts, prometheus.NewRegistry(), nil))
	t.Cleanup(hs.Close)
	parent := &drydock.Job{ID: "0193e2e0-0000-7000-8000-00000000f011", OwnerID: "local", JobSpec: drydock.JobSpec{Task: "first", Model: "m1", Profile: drydock.ProfileHeadless, Egress: []string{"example.com"}}}
	if err := ws.CreateJob(t.Context(), parent); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, error) {
		t.Helper()
		var c followUpCLI
		var out, errw syncBuffer
		c.Out, c.Err, c.In = &out, &errw, strings.NewReader("")
		no := false
		c.color = &no
		parser, err := kong.New(&c, kong.Name("drydock"), kong.Exit(func(int) { t.Fatalf("kong exited on %q", args) }))
		if err != nil {
			t.Fatal(err)
		}
		ctx, err := parser.Parse(append([]string{"--url", hs.URL}, args...))
		if err != nil {
			return "", "", err
		}
		err = ctx.Run(&c.Globals)
		return out.String(), errw.String(), err
	}

	if _, _, err := run("follow-up", parent.ID, "too early"); err == nil || !strings.Contains(err.Error(), "is pending") {
		t.Fatalf("follow-up of a pending job: %v; want the server's refusal", err)
	}
	if _, err := ws.ClaimJob(t.Context(), "w", time.Minute); err != nil {
		t.Fatal(err)
	}
	n, _ := arts.Put(t.Context(), parent.ID+".tar.gz", strings.NewReader("archive"))
	ws.SetArtifact(t.Context(), parent.ID, parent.ID+".tar.gz", n)
	if err := ws.FinishJob(t.Context(), parent.ID, "w", drydock.JobResult{Status: drydock.StatusComplete}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run("follow-up", parent.ID, "go on", "--no-secrets", "--secret", "HOME"); err == nil || !strings.Contains(err.Error(), "contradict") {
		t.Errorf("--no-secrets with --secret: %v", err)
	}
	if _, _, err := run("follow-up", parent.ID, " "); err == nil || !strings.Contains(err.Error(), "blank") {
		t.Errorf("a blank message: %v", err)
	}
	out, errOut, err := run("follow-up", parent.ID, "now add dark mode", "--model", "m2", "--no-egress", "--max-steps", "3")
	if err != nil {
		t.Fatalf("follow-up: %v", err)
	}
	id := strings.TrimSpace(out)
	child, err := ws.GetJob(t.Context(), id)
	if err != nil {
		t.Fatalf("the printed id %q is no job: %v", out, err)
	}
	if child.ParentJobID != parent.ID || child.Task != "now add dark mode" || child.Model != "m2" || len(child.Egress) != 0 || child.MaxSteps != 3 {
		t.Errorf("follow-up stored as %+v", child)
	}
	mustContain(t, "stderr", errOut, "Follows up: "+parent.ID)
}
