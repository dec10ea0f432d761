package client_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
	"github.com/drydockhq/drydock/artifact/local"
	"github.com/drydockhq/drydock/client"
	"github.com/drydockhq/drydock/store/sqlite"
	"github.com/drydockhq/drydock/watch"
)

// FollowUp creates the job that continues a finished one, with the
// fields it overrides; an answer lost after the server committed is
// retried under the same key and returns that job, not a second; a job
// that has not finished is ECONFLICT, not retried.
func TestFollowUp(t *testing.T) {
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
	srv := api.New(api.Config{DevMode: true}, ws, noQueue{}, arts, prometheus.NewRegistry(), nil)
	var lose atomic.Int32 // how many answers to lose
	var posts atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages") {
			posts.Add(1)
			if lose.Add(-1) >= 0 {
				srv.ServeHTTP(httptest.NewRecorder(), r) // committed, answer lost
				conn, _, _ := http.NewResponseController(w).Hijack()
				conn.Close()
				return
			}
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	c := client.FastRetries(client.New(hs.URL, ""), time.Minute)

	parent, err := c.Schedule(t.Context(), drydock.JobSpec{Task: "first", Model: "m1", Metadata: map[string]string{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.FollowUp(t.Context(), parent.ID, client.FollowUpRequest{Text: "too early"}); drydock.ErrorCode(err) != drydock.ECONFLICT || posts.Load() != 0 {
		// Refused before any POST: to a pending job it would be a message.
		t.Fatalf("follow-up of a pending job: %v after %d posts; want a conflict and no post", err, posts.Load())
	}
	if _, err := ws.ClaimJob(t.Context(), "w", time.Minute); err != nil {
		t.Fatal(err)
	}
	n, err := arts.Put(t.Context(), parent.ID+".tar.gz", strings.NewReader("archive"))
	if err != nil {
		t.Fatal(err)
	}
	ws.SetArtifact(t.Context(), parent.ID, parent.ID+".tar.gz", n)
	if err := ws.FinishJob(t.Context(), parent.ID, "w", drydock.JobResult{Status: drydock.StatusComplete}); err != nil {
		t.Fatal(err)
	}
	lose.Store(1)
	child, err := c.FollowUp(t.Context(), parent.ID, client.FollowUpRequest{Text: "go on", Metadata: map[string]string{}, MaxSteps: 4})
	if err != nil {
		t.Fatalf("FollowUp: %v", err)
	}
	if child.ParentJobID != parent.ID || child.Task != "go on" || child.Model != "m1" || len(child.Metadata) != 0 || child.MaxSteps != 4 {
		t.Errorf("follow-up %+v; want parent %s, the model inherited, metadata cleared, 4 steps", child, parent.ID)
	}
	got, err := c.Job(t.Context(), parent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.FollowUps) != 1 || got.FollowUps[0] != child.ID {
		t.Errorf("the parent's follow-ups %v; want only %s (the lost answer's retry made no second)", got.FollowUps, child.ID)
	}
	// A held follow-up: the finished workspace in a sandbox for the caller.
	held, err := c.FollowUp(t.Context(), parent.ID, client.FollowUpRequest{Text: "check", Agent: drydock.AgentNone, Egress: []string{}})
	if err != nil || held.Agent != drydock.AgentNone {
		t.Errorf("held follow-up: %+v %v; want agent none", held, err)
	}
}
