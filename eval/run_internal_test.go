package eval

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
)

// A check's sandbox is waited for through the event stream, and, when the
// server refuses the stream (a token's streams are bounded: 429), by
// reading the job's events: the check still runs. A held job that ends
// before its sandbox is ready is an error saying how it ended.
func TestWaitHeldFallsBackToReadingEvents(t *testing.T) {
	t.Parallel()
	var pages atomic.Int32
	var ready atomic.Bool
	ready.Store(true)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.Contains(r.Header.Get("Accept"), "text/event-stream"):
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"error": {"code": "too_many_requests", "message": "this token has 64 streams open"}}`))
		case strings.HasSuffix(r.URL.Path, "/events"):
			n := pages.Add(1)
			switch {
			case n == 1: // nothing yet
				w.Write([]byte(`{"events": [], "next_after": 0, "done": false}`))
			case ready.Load():
				w.Write([]byte(`{"events": [{"job_id": "j", "seq": 1, "type": "log", "time": "2026-01-01T00:00:00Z", "data": {"kind": "sandbox_held"}}], "next_after": 1, "done": false}`))
			default:
				w.Write([]byte(`{"events": [{"job_id": "j", "seq": 1, "type": "status", "time": "2026-01-01T00:00:00Z", "data": {"status": "error"}}], "next_after": 1, "done": true}`))
			}
		default:
			w.Write([]byte(`{"job_id": "j", "status": "error", "error": "the sandbox image is missing", "created_at": "2026-01-01T00:00:00Z"}`))
		}
	}))
	t.Cleanup(hs.Close)
	c := client.New(hs.URL, "")
	if err := waitHeld(t.Context(), c, "j"); err != nil {
		t.Fatalf("waitHeld with the stream refused: %v", err)
	}
	ready.Store(false)
	pages.Store(1)
	err := waitHeld(t.Context(), c, "j")
	if err == nil || !strings.Contains(err.Error(), "ended error before its sandbox was ready: the sandbox image is missing") {
		t.Errorf("waitHeld of a job that ended: %v", err)
	}
}

// Why a job that did not complete failed, from its status and the runner's
// error messages.
func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status drydock.JobStatus
		err    string
		want   string
	}{
		{drydock.StatusComplete, "", ""},
		{drydock.StatusCancelled, "cancelled by request", ReasonCancelled},
		{drydock.StatusError, "the agent used all of its 20 steps without finishing the task (raise max_steps, or split the task)", ReasonBudget},
		{drydock.StatusError, "job timed out after 10m0s", ReasonTimeout},
		{drydock.StatusError, "the OpenAI API refused the request (400 Bad Request): no", ReasonError},
		{drydock.StatusError, "", ReasonError},
	}
	for _, c := range cases {
		if got := classify(&drydock.Job{Status: c.status, Error: c.err}); got != c.want {
			t.Errorf("%s %q: %q; want %q", c.status, c.err, got, c.want)
		}
	}
}
