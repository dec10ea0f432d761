package client_test

import (
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
