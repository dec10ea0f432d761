package client_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
)

// Trajectory is the job with its whole event log, in the format replay
// reads, from either server.
func TestTrajectory(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		j := srv.AddJob(t, drydock.JobSpec{Task: "t"}, time.Now())
		srv.SetStatus(t, j.ID, drydock.StatusRunning, "")
		srv.Emit(t, j.ID, drydock.EventLog, map[string]string{"message": "hi"})
		srv.SetStatus(t, j.ID, drydock.StatusComplete, "")
		rc, err := c.Trajectory(t.Context(), j.ID)
		if err != nil {
			t.Fatalf("Trajectory: %v", err)
		}
		defer rc.Close()
		var tr drydock.Trajectory
		if err := json.NewDecoder(rc).Decode(&tr); err != nil {
			t.Fatal(err)
		}
		if tr.Format != drydock.TrajectoryFormat || tr.Job == nil || tr.Job.ID != j.ID || tr.Job.Status != drydock.StatusComplete || tr.Job.StatusURL == "" {
			t.Errorf("trajectory %s of %+v; want %s of the complete job with its links", tr.Format, tr.Job, drydock.TrajectoryFormat)
		}
		if got := seqs(tr.Events); len(got) != 4 || got[0] != 1 || got[3] != 4 || tr.Events[2].Type != drydock.EventLog {
			t.Errorf("events %v; want the whole log, 1..4", got)
		}
		if _, err := c.Trajectory(t.Context(), "nope"); drydock.ErrorCode(err) != drydock.ENOTFOUND {
			t.Errorf("Trajectory(nope): %v, want not_found", err)
		}
	})
}

// What the real server refuses at its routes, the fake refuses alike:
// a method a route does not take, a parameter it does not know, a path
// that is no route; each with the JSON error body.
func TestServersRefuseWhatNoRouteTakes(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, _ *client.Client) {
		j := srv.AddJob(t, drydock.JobSpec{Task: "t"}, time.Now())
		for _, tc := range []struct {
			method, path string
			status       int
			code         string
		}{
			{http.MethodDelete, "/v1/jobs/" + j.ID, http.StatusMethodNotAllowed, drydock.EMETHODNOTALLOWED},
			{http.MethodGet, "/v1/jobs/" + j.ID + "/cancel", http.StatusMethodNotAllowed, drydock.EMETHODNOTALLOWED},
			{http.MethodGet, "/v1/jobs/" + j.ID + "/events?bogus=1", http.StatusBadRequest, drydock.EINVALID},
			{http.MethodGet, "/v1/jobs?bogus=1", http.StatusBadRequest, drydock.EINVALID},
			{http.MethodGet, "/v1/nothing", http.StatusNotFound, drydock.ENOTFOUND},
		} {
			req, _ := http.NewRequestWithContext(t.Context(), tc.method, srv.URL()+tc.path, nil)
			req.Header.Set("Authorization", "Bearer "+srv.Token())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var body drydock.ErrorBody
			json.Unmarshal(data, &body)
			if resp.StatusCode != tc.status || body.Error.Code != tc.code || body.Error.Message == "" {
				t.Errorf("%s %s: %d %s; want %d %s with a message", tc.method, tc.path, resp.StatusCode, data, tc.status, tc.code)
			}
		}
	})
}
