package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

type noQueue struct{}

func (noQueue) Notify()       {}
func (noQueue) Cancel(string) {}

// fault is what the gate does with one job creation request.
type fault int

const (
	pass       fault = iota
	loseAnswer       // the real server creates the job; the answer is cut
	refuse           // the connection closes before the server sees it
	gateway503       // a gateway in front answers 503
)

// gate sits in front of the real API server (on SQLite) and plays faults
// on job creations, one per request in order, then passes.
type gate struct {
	mu     sync.Mutex
	faults []fault
	keys   []string // Idempotency-Key of each creation request
}

func (g *gate) next(r *http.Request) fault {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.keys = append(g.keys, r.Header.Get("Idempotency-Key"))
	if len(g.faults) == 0 {
		return pass
	}
	f := g.faults[0]
	g.faults = g.faults[1:]
	return f
}

func (g *gate) sentKeys() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.keys)
}

func realServer(t *testing.T, faults ...fault) (*client.Client, *watch.Store, *gate) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ws := watch.Wrap(st)
	// Artifacts for the inputs of uploads.
	arts, err := local.New(filepath.Join(t.TempDir(), "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	srv := api.New(api.Config{DevMode: true}, ws, noQueue{}, arts, prometheus.NewRegistry(), nil)
	g := &gate{faults: faults}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/jobs" {
			srv.ServeHTTP(w, r)
			return
		}
		switch g.next(r) {
		case loseAnswer:
			srv.ServeHTTP(httptest.NewRecorder(), r) // committed when it returns
			fallthrough
		case refuse:
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.Close()
		case gateway503:
			http.Error(w, "upstream restarting", http.StatusServiceUnavailable)
		default:
			srv.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(hs.Close)
	return client.FastRetries(client.New(hs.URL, ""), time.Minute), ws, g
}

func storedJobs(t *testing.T, st drydock.Store) []*drydock.Job {
	t.Helper()
	js, _, err := st.ListJobs(t.Context(), drydock.JobFilter{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// The answer to the first request is lost after the server committed the
// job: the retry carries the same key and gets that job, not a second.
func TestScheduleRetryAfterALostAnswerReturnsTheSameJob(t *testing.T) {
	t.Parallel()
	c, st, g := realServer(t, loseAnswer, refuse, gateway503)
	j, err := c.Schedule(t.Context(), drydock.JobSpec{Task: "only once"})
	if err != nil {
		t.Fatalf("Schedule: %v", err)
	}
	js := storedJobs(t, st)
	if len(js) != 1 || js[0].ID != j.ID || j.Task != "only once" {
		t.Fatalf("the store holds %d jobs (%v); Schedule returned %s: want exactly the one job", len(js), js, j.ID)
	}
	keys := g.sentKeys()
	if len(keys) != 4 || keys[0] == "" || len(slices.Compact(slices.Clone(keys))) != 1 {
		t.Errorf("creation requests sent keys %q; want 4 requests with one key", keys)
	}
}

// With retries exhausted the outcome is unknown: the error says so and
// names the key, and scheduling again with that key returns the job the
// lost request created.
func TestScheduleGivesUpWithTheKeyAndTheKeyFindsTheJob(t *testing.T) {
	t.Parallel()
	c, st, g := realServer(t, loseAnswer, refuse, refuse, refuse, refuse, refuse)
	_, err := c.Schedule(t.Context(), drydock.JobSpec{Task: "lost"})
	var se *client.ScheduleError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *client.ScheduleError", err, err)
	}
	if se.Attempts != client.DefaultRetries+1 || se.Key == "" || !strings.Contains(err.Error(), se.Key) || !drydock.IsRetryable(err) {
		t.Errorf("ScheduleError = %+v (%q); want %d attempts, the key in the message, retryable", se, err, client.DefaultRetries+1)
	}
	var ce *client.ConnError
	if !errors.As(err, &ce) {
		t.Errorf("the cause %v is not a *client.ConnError", se.Err)
	}
	created := storedJobs(t, st)
	if len(created) != 1 {
		t.Fatalf("%d jobs stored; want the one the lost request created", len(created))
	}

	j, err := c.Schedule(t.Context(), drydock.JobSpec{Task: "lost"}, client.WithIdempotencyKey(se.Key))
	if err != nil || j.ID != created[0].ID {
		t.Fatalf("Schedule with the key again = %v, %v; want job %s", j, err, created[0].ID)
	}
	if n := len(storedJobs(t, st)); n != 1 {
		t.Errorf("%d jobs after the retry; want 1", n)
	}
	if keys := g.sentKeys(); keys[len(keys)-1] != `"`+se.Key+`"` {
		t.Errorf("the last request sent key %q; want %q as a Structured Field String", keys[len(keys)-1], se.Key)
	}
	// The same key for another job is refused, not retried.
	_, err = c.Schedule(t.Context(), drydock.JobSpec{Task: "another"}, client.WithIdempotencyKey(se.Key))
	if drydock.ErrorCode(err) != drydock.EKEYREUSED || errors.As(err, &se) {
		t.Errorf("the key for another job: %v; want EKEYREUSED, no ScheduleError", err)
	}
}

// Definite answers are not retried: nothing was created, or the error will
// not change.
func TestScheduleDoesNotRetryDefiniteErrors(t *testing.T) {
	t.Parallel()
	c, st, g := realServer(t)
	_, err := c.Schedule(t.Context(), drydock.JobSpec{Task: "x", ContextBudget: 10})
	if drydock.ErrorCode(err) != drydock.EINVALID || len(g.sentKeys()) != 1 {
		t.Errorf("400: %v after %d requests; want EINVALID after 1", err, len(g.sentKeys()))
	}
	if _, err := c.Schedule(t.Context(), drydock.JobSpec{Task: "x"}, client.WithIdempotencyKey("bad\x01key")); drydock.ErrorCode(err) != drydock.EINVALID {
		t.Errorf("a bad own key: %v; want EINVALID before any request", err)
	}
	if n := len(storedJobs(t, st)); n != 0 || len(g.sentKeys()) != 1 {
		t.Errorf("%d jobs, %d requests", n, len(g.sentKeys()))
	}
}

func TestScheduleWithoutRetries(t *testing.T) {
	t.Parallel()
	c, st, g := realServer(t, gateway503)
	_, err := client.FastRetries(client.New(c.BaseURL(), "", client.WithRetries(0)), time.Minute).Schedule(t.Context(), drydock.JobSpec{Task: "x"})
	var se *client.ScheduleError
	if !errors.As(err, &se) || se.Attempts != 1 || drydock.ErrorCode(err) != drydock.EUNAVAILABLE {
		t.Errorf("503 with retries off: %v; want a ScheduleError after 1 attempt", err)
	}
	if len(g.sentKeys()) != 1 || len(storedJobs(t, st)) != 0 {
		t.Errorf("%d requests, %d jobs; want 1 and 0", len(g.sentKeys()), len(storedJobs(t, st)))
	}
}

// A context that ends while retrying leaves the outcome unknown too.
func TestScheduleInterruptedNamesTheKey(t *testing.T) {
	t.Parallel()
	c, _, _ := realServer(t, loseAnswer, refuse, refuse, refuse, refuse, refuse, refuse)
	ctx, cancel := context.WithCancel(t.Context())
	c = client.New(c.BaseURL(), "", client.WithRetries(50))
	time.AfterFunc(300*time.Millisecond, cancel)
	_, err := c.Schedule(ctx, drydock.JobSpec{Task: "x"})
	var se *client.ScheduleError
	if !errors.As(err, &se) || se.Key == "" || !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted: %v; want a ScheduleError naming the key and wrapping context.Canceled", err)
	}
}

// The same Idempotency-Key with the same spec gives the job it created,
// on either server; with another spec it is refused.
func TestScheduleUnderAKeyReplaysTheJob(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		key := client.NewIdempotencyKey()
		first, err := c.Schedule(t.Context(), drydock.JobSpec{Task: "once"}, client.WithIdempotencyKey(key))
		if err != nil {
			t.Fatal(err)
		}
		again, err := c.Schedule(t.Context(), drydock.JobSpec{Task: "once"}, client.WithIdempotencyKey(key))
		if err != nil || again.ID != first.ID {
			t.Errorf("the same request again: %+v, %v; want job %s", again, err, first.ID)
		}
		if _, err := c.Schedule(t.Context(), drydock.JobSpec{Task: "another"}, client.WithIdempotencyKey(key)); drydock.ErrorCode(err) != drydock.EKEYREUSED {
			t.Errorf("the key with another spec: %v, want %s", err, drydock.EKEYREUSED)
		}
		if p, err := c.Jobs(t.Context(), client.ListOptions{}); err != nil || len(p.Jobs) != 1 {
			t.Errorf("jobs %v, %v; want one", p, err)
		}
	})
}
