package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
	"github.com/prometheus/client_golang/prometheus"
)

// withEgressPolicy serves b's store again under the operator's egress
// default and ceiling.
func withEgressPolicy(t *testing.T, b *bundle, def, ceiling []string) {
	t.Helper()
	p, err := drydock.NewEgressPolicy(def, ceiling)
	if err != nil {
		t.Fatal(err)
	}
	srv := api.New(api.Config{SSEPoll: 50 * time.Millisecond, Egress: p}, b.store, b.queue, b.artifacts, prometheus.NewRegistry(), nil)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	b.url = hs.URL
}

func (b *bundle) getJob(t *testing.T, token, id string) *drydock.Job {
	t.Helper()
	resp, data := b.do(t, "GET", "/v1/jobs/"+id, token, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("get job: %d %s", resp.StatusCode, data)
	}
	var j drydock.Job
	if err := json.Unmarshal(data, &j); err != nil {
		t.Fatal(err)
	}
	return &j
}

// A job that gives no egress runs with the server's default, and its JSON
// says so; a job that gives a list, an empty one included, runs with its
// own.
func TestEgressDefaultAppliesToJobsWithoutAList(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	withEgressPolicy(t, b, []string{"registry.example.com:443"}, nil)

	j := b.schedule(t, b.alice, `{"task": "x"}`)
	for _, got := range []*drydock.Job{j, b.getJob(t, b.alice, j.ID)} {
		if !slices.Equal(got.Egress, []string{"registry.example.com:443"}) || got.EgressSource != drydock.EgressFromDefault {
			t.Errorf("job without a list: egress %q from %q; want the default", got.Egress, got.EgressSource)
		}
	}
	for body, want := range map[string][]string{
		`{"task": "x", "egress": []}`:                    nil,
		`{"task": "x", "egress": ["other.example.org"]}`: {"other.example.org"},
	} {
		j := b.getJob(t, b.alice, b.schedule(t, b.alice, body).ID)
		if !slices.Equal(j.Egress, want) || j.EgressSource != drydock.EgressFromJob {
			t.Errorf("%s: egress %q from %q; want %q from the job", body, j.Egress, j.EgressSource, want)
		}
	}
}

// The same Idempotency-Key with no list and with an empty list are two
// different requests (the default against nothing).
func TestEgressDefaultIdempotencyTellsNoListFromEmpty(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	withEgressPolicy(t, b, []string{"registry.example.com:443"}, nil)
	key := []string{"k-egress-1"}
	if code, _, _, data := post(t, b.url, "/v1/jobs", b.alice, key, `{"task": "x"}`); code != http.StatusCreated {
		t.Fatalf("first: %d %s", code, data)
	}
	if code, _, _, data := post(t, b.url, "/v1/jobs", b.alice, key, `{"task": "x", "egress": []}`); code != http.StatusUnprocessableEntity {
		t.Errorf("the key with an empty list: %d %s; want 422 (another request)", code, data)
	}
}

// With a ceiling (--egress-allow), a job's list may narrow or widen the
// default within it, at creation and on every change; beyond it the
// answer is 403 naming the entry, and nothing is stored or changed.
func TestEgressCeilingBoundsJobLists(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	withEgressPolicy(t, b, []string{"registry.example.com:443"}, []string{"*.example.com:443", "git.example.org"})

	for _, body := range []string{
		`{"task": "x", "egress": ["evil.example.net"]}`,
		`{"task": "x", "egress": ["registry.example.com"]}`, // any port is wider than 443
	} {
		resp, data := b.do(t, "POST", "/v1/jobs", b.alice, body)
		if resp.StatusCode != http.StatusForbidden || errorCode(t, data) != drydock.EFORBIDDEN || !strings.Contains(string(data), "outside what this server allows") {
			t.Errorf("%s: %d %s; want 403 naming the entry", body, resp.StatusCode, data)
		}
	}
	_, data := b.do(t, "GET", "/v1/jobs", b.alice, "")
	if strings.Contains(string(data), `"job_id"`) {
		t.Errorf("a refused job was stored: %s", data)
	}

	// Narrower and wider than the default, within the ceiling.
	j := b.schedule(t, b.alice, `{"task": "x", "egress": ["git.example.org:22", "a.example.com:443"]}`)
	path := "/v1/jobs/" + j.ID + "/egress"
	resp, data := b.do(t, "PUT", path, b.alice, `{"egress": ["evil.example.net:443"]}`)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(data), "evil.example.net:443") {
		t.Errorf("PUT beyond the ceiling: %d %s; want 403 naming the entry", resp.StatusCode, data)
	}
	if got := b.getJob(t, b.alice, j.ID); !slices.Equal(got.Egress, []string{"git.example.org:22", "a.example.com:443"}) {
		t.Errorf("a refused change changed the list to %q", got.Egress)
	}
	if resp, data := b.do(t, "PUT", path, b.alice, `{"egress": ["b.example.com:443"]}`); resp.StatusCode != http.StatusOK {
		t.Errorf("PUT within the ceiling: %d %s", resp.StatusCode, data)
	}

	// A job that started from the default owns its list once it sets one.
	d := b.schedule(t, b.alice, `{"task": "x"}`)
	if resp, data := b.do(t, "PUT", "/v1/jobs/"+d.ID+"/egress", b.alice, `{"egress": []}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT []: %d %s", resp.StatusCode, data)
	}
	if got := b.getJob(t, b.alice, d.ID); len(got.Egress) != 0 || got.EgressSource != drydock.EgressFromJob {
		t.Errorf("after PUT []: egress %q from %q; want nothing, from the job", got.Egress, got.EgressSource)
	}
}
