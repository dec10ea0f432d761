package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
	"github.com/prometheus/client_golang/prometheus"
)

// withEgressHook serves b's store again with an EgressChanged hook that
// records the job ids it hears of.
func withEgressHook(t *testing.T, b *bundle) *[]string {
	t.Helper()
	var mu sync.Mutex
	heard := []string{}
	srv := api.New(api.Config{SSEPoll: 50 * time.Millisecond, EgressChanged: func(ctx context.Context, j *drydock.Job) {
		mu.Lock()
		heard = append(heard, j.ID+" "+strings.Join(j.Egress, ","))
		mu.Unlock()
	}}, b.store, b.queue, b.artifacts, prometheus.NewRegistry(), nil)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	b.url = hs.URL
	return &heard
}

func TestSetEgressReplacesTheListAndRecordsIt(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	heard := withEgressHook(t, b)
	j := b.schedule(t, b.alice, `{"task": "x", "egress": ["pypi.example.com:443"]}`)
	path := "/v1/jobs/" + j.ID + "/egress"

	resp, data := b.do(t, "PUT", path, b.alice, `{"egress": [" example.com ", "pypi.example.com:443", "10.0.0.0/8"]}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("owner: %d %s", resp.StatusCode, data)
	}
	var got drydock.Job
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Egress, ",") != "example.com,pypi.example.com:443,10.0.0.0/8" || got.StatusURL == "" {
		t.Errorf("answered job: egress %q status_url %q", got.Egress, got.StatusURL)
	}
	if want := j.ID + " example.com,pypi.example.com:443,10.0.0.0/8"; len(*heard) != 1 || (*heard)[0] != want {
		t.Errorf("hook heard %q, want %q", *heard, want)
	}
	_, data = b.do(t, "GET", "/v1/jobs/"+j.ID+"/events", b.alice, "")
	if !strings.Contains(string(data), "egress allowlist changed; allowed example.com, 10.0.0.0/8") {
		t.Errorf("no event records the change: %s", data)
	}

	// An admin may change it too, and [] denies everything.
	if resp, data := b.do(t, "PUT", path, b.admin, `{"egress": []}`); resp.StatusCode != http.StatusOK || !strings.Contains(string(data), `"job_id"`) {
		t.Errorf("admin: %d %s", resp.StatusCode, data)
	}
	_, data = b.do(t, "GET", "/v1/jobs/"+j.ID+"/events", b.alice, "")
	if !strings.Contains(string(data), "nothing is allowed now") {
		t.Errorf("emptying the list is not recorded: %s", data)
	}
}

func TestSetEgressRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	withEgressHook(t, b)
	j := b.schedule(t, b.alice, `{"task": "x"}`)
	path := "/v1/jobs/" + j.ID + "/egress"
	cases := []struct {
		name, token, body string
		status            int
		says              string
	}{
		{"another user", b.bob, `{"egress": ["example.com"]}`, 404, "not found"},
		{"no token", "", `{"egress": ["example.com"]}`, 401, ""},
		{"a bad rule", b.alice, `{"egress": ["example.com:99999"]}`, 400, "port must be a number"},
		{"a blank rule", b.alice, `{"egress": ["  "]}`, 400, "empty egress destination"},
		{"no list", b.alice, `{}`, 400, "egress is required"},
		{"another field", b.alice, `{"egress": [], "task": "y"}`, 400, "task"},
		{"too many rules", b.alice, `{"egress": [` + strings.Repeat(`"a.example",`, 64) + `"b.example"]}`, 400, "limit is 64"},
	}
	for _, tc := range cases {
		resp, data := b.do(t, "PUT", path, tc.token, tc.body)
		if resp.StatusCode != tc.status || !strings.Contains(string(data), tc.says) {
			t.Errorf("%s: %d %s; want %d saying %q", tc.name, resp.StatusCode, data, tc.status, tc.says)
		}
	}
	if got, _ := b.store.GetJob(t.Context(), j.ID); len(got.Egress) != 0 {
		t.Errorf("a refused change was stored: %q", got.Egress)
	}

	// A finished job's list is history.
	if resp, data := b.do(t, "POST", "/v1/jobs/"+j.ID+"/cancel", b.alice, ""); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", resp.StatusCode, data)
	}
	resp, data := b.do(t, "PUT", path, b.alice, `{"egress": ["example.com"]}`)
	if resp.StatusCode != http.StatusConflict || errorCode(t, data) == "" {
		t.Errorf("finished job: %d %s", resp.StatusCode, data)
	}
}
