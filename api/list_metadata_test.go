package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/drydockhq/drydock/api"
)

// GET /v1/jobs?metadata=KEY=VALUE lists the caller's jobs having every pair
// (how the web UI finds the jobs of a drydock eval run); a malformed filter
// is a 400 that says how to write one.
func TestListByMetadata(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	a1 := b.schedule(t, b.alice, `{"task": "a", "metadata": {"eval_run": "r1", "eval_task": "hello"}}`)
	b.schedule(t, b.alice, `{"task": "b", "metadata": {"eval_run": "r2"}}`)
	a3 := b.schedule(t, b.alice, `{"task": "c", "metadata": {"eval_run": "r1", "eval_task": "fix=it"}}`)
	b.schedule(t, b.bob, `{"task": "d", "metadata": {"eval_run": "r1"}}`)
	list := func(token, query string) []string {
		t.Helper()
		resp, data := b.do(t, "GET", "/v1/jobs?"+query, token, "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("list %s: %d %s", query, resp.StatusCode, data)
		}
		var p api.JobPage
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, j := range p.Jobs {
			ids = append(ids, j.ID)
		}
		return ids
	}
	if got := list(b.alice, "metadata=eval_run=r1"); !slices.Equal(got, []string{a3.ID, a1.ID}) {
		t.Errorf("alice's eval_run r1: %v; want %v (bob's job is not hers)", got, []string{a3.ID, a1.ID})
	}
	// The first "=" splits key from value: the value may hold more.
	if got := list(b.alice, "metadata=eval_run=r1&metadata="+url.QueryEscape("eval_task=fix=it")); !slices.Equal(got, []string{a3.ID}) {
		t.Errorf("two pairs, a value with '=': %v; want [%s]", got, a3.ID)
	}
	if got := list(b.alice, "metadata=eval_run=r3"); len(got) != 0 {
		t.Errorf("no job has eval_run r3: %v", got)
	}
	for _, q := range []string{"metadata=eval_run", "metadata==x", "metadata=k=a&metadata=k=b", "metadata=" + strings.Repeat("k", 65) + "=v"} {
		resp, data := b.do(t, "GET", "/v1/jobs?"+q, b.alice, "")
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(data), "metadata") {
			t.Errorf("%s: %d %s; want 400 about metadata", q, resp.StatusCode, data)
		}
	}
}
