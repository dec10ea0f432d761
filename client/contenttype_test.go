package client_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
)

// sentRequest is what the SDK put on the wire.
type sentRequest struct {
	method, path, contentType string
	body                      int
}

// Every request the SDK sends with a body says it is JSON: the server
// refuses other bodies with 415 (a browser's cross-site form or text/plain
// request cannot set that type). Requests without a body carry no type.
func TestEveryJSONBodyIsLabelledJSON(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, _ *client.Client) {
		target, _ := url.Parse(srv.URL())
		proxy := httputil.NewSingleHostReverseProxy(target)
		var (
			mu   sync.Mutex
			sent []sentRequest
		)
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			sent = append(sent, sentRequest{r.Method, r.URL.Path, r.Header.Get("Content-Type"), len(body)})
			mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.Host = target.Host // a loopback server answers its own names only
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(hs.Close)
		c := client.New(hs.URL, srv.Token())
		ctx := t.Context()

		other := srv.AddJob(t, drydock.JobSpec{Task: "u"}, time.Now())
		srv.SetStatus(t, other.ID, drydock.StatusRunning, "")
		srv.SetArchive(t, other.ID, map[string]string{"x": "x"})
		srv.SetStatus(t, other.ID, drydock.StatusComplete, "")
		j, err := c.Schedule(ctx, drydock.JobSpec{Task: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.SetEgress(ctx, j.ID, []string{"pypi.example.com:443"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.SetEgress(ctx, j.ID, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Cancel(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
		_, _ = c.Job(ctx, other.ID)
		_, _ = c.Jobs(ctx, client.ListOptions{})
		_, _ = c.Events(ctx, other.ID, 0, 0)
		_ = c.StreamEvents(ctx, other.ID, 0, func(*drydock.Event) error { return nil })
		_, _ = c.Download(ctx, other.ID, "zip", io.Discard)
		_, _ = c.Trajectory(ctx, other.ID)

		mu.Lock()
		defer mu.Unlock()
		bodies := 0
		for _, r := range sent {
			switch {
			case r.body > 0 && r.contentType != "application/json":
				t.Errorf("%s %s sent a %d-byte body as %q, want application/json", r.method, r.path, r.body, r.contentType)
			case r.body == 0 && r.contentType != "":
				t.Errorf("%s %s sent no body but Content-Type %q", r.method, r.path, r.contentType)
			}
			if r.body > 0 {
				bodies++
			}
		}
		if bodies != 3 || len(sent) < 10 {
			t.Errorf("%d requests, %d with a body; want every SDK call, 3 with a body (schedule, 2 egress): %+v", len(sent), bodies, sent)
		}
	})
}

// The fake server refuses what the real one refuses, with the same code,
// so that an SDK or CLI change that drops the type fails their tests.
func TestServersRefuseBodiesThatAreNotJSON(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", ""} {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL()+"/v1/jobs", strings.NewReader(`{"task": "t"}`))
			req.Header.Set("Authorization", "Bearer "+srv.Token())
			if ct != "" {
				req.Header.Set("Content-Type", ct)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body drydock.ErrorBody
			json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnsupportedMediaType || body.Error.Code != drydock.EUNSUPPORTEDMEDIA || body.Error.Message == "" {
				t.Errorf("body as %q: %d %+v, want 415 %s with a message", ct, resp.StatusCode, body, drydock.EUNSUPPORTEDMEDIA)
			}
		}
		if p, err := c.Jobs(t.Context(), client.ListOptions{}); err != nil || len(p.Jobs) != 0 {
			t.Errorf("jobs after refused requests: %v, %v; want none", p, err)
		}
	})
}
