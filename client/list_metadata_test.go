package client_test

import (
	"time"

	"github.com/drydockhq/drydock"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/drydockhq/drydock/client"
)

// Jobs sends each metadata pair as its own metadata=KEY=VALUE parameter,
// in a stable order.
func TestJobsMetadataFilter(t *testing.T) {
	t.Parallel()
	var got []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Query()["metadata"]
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jobs": [], "next_cursor": ""}`))
	}))
	t.Cleanup(hs.Close)
	c := client.New(hs.URL, "")
	if _, err := c.Jobs(t.Context(), client.ListOptions{Metadata: map[string]string{"eval_task": "a=b", "eval_run": "r1"}}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"eval_run=r1", "eval_task=a=b"}; !slices.Equal(got, want) {
		t.Errorf("metadata parameters %q; want %q", got, want)
	}
}

// A metadata filter lists the jobs whose metadata holds every pair, on
// either server; a malformed pair is refused.
func TestJobsFilteredByMetadata(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		now := time.Now()
		a := srv.AddJob(t, drydock.JobSpec{Task: "a", Metadata: map[string]string{"eval_run": "r1", "eval_task": "x=1"}}, now)
		srv.AddJob(t, drydock.JobSpec{Task: "b", Metadata: map[string]string{"eval_run": "r2", "eval_task": "x=1"}}, now.Add(time.Second))
		c2 := srv.AddJob(t, drydock.JobSpec{Task: "c", Metadata: map[string]string{"eval_run": "r1"}}, now.Add(2*time.Second))
		srv.AddJob(t, drydock.JobSpec{Task: "d"}, now.Add(3*time.Second))

		for _, tc := range []struct {
			filter map[string]string
			want   []string
		}{
			{map[string]string{"eval_run": "r1"}, []string{c2.ID, a.ID}},
			{map[string]string{"eval_run": "r1", "eval_task": "x=1"}, []string{a.ID}},
			{map[string]string{"eval_run": "r3"}, nil},
		} {
			p, err := c.Jobs(t.Context(), client.ListOptions{Metadata: tc.filter})
			if err != nil {
				t.Fatalf("%v: %v", tc.filter, err)
			}
			if got := jobIDs(p.Jobs); !slices.Equal(got, tc.want) {
				t.Errorf("jobs with %v = %v; want %v", tc.filter, got, tc.want)
			}
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL()+"/v1/jobs?metadata=novalue", nil)
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("metadata=novalue: %d; want 400", resp.StatusCode)
		}
	})
}
