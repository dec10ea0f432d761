package client_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
	"github.com/google/go-cmp/cmp"
)

// collect returns an fn for StreamEvents that records what it sees.
func collect() (func(*drydock.Event) error, func() []*drydock.Event) {
	var mu sync.Mutex
	var got []*drydock.Event
	return func(e *drydock.Event) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, e)
			return nil
		}, func() []*drydock.Event {
			mu.Lock()
			defer mu.Unlock()
			return got
		}
}

func TestStreamEventsLive(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		j := srv.AddJob(t, drydock.JobSpec{Task: "t"}, time.Now()) // 1
		fn, got := collect()
		done := make(chan error, 1)
		go func() { done <- c.StreamEvents(t.Context(), j.ID, 0, fn) }()

		srv.SetStatus(t, j.ID, drydock.StatusRunning, "")                                                                     // 2
		srv.Emit(t, j.ID, drydock.EventToolCall, map[string]any{"name": "bash", "input": map[string]string{"command": "ls"}}) // 3
		srv.SetStatus(t, j.ID, drydock.StatusComplete, "")                                                                    // 4

		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("StreamEvents: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("StreamEvents did not return after the job completed")
		}
		events := got()
		if diff := cmp.Diff([]int64{1, 2, 3, 4}, seqs(events)); diff != "" {
			t.Fatalf("seqs (-want +got):\n%s", diff)
		}
		if events[2].Type != drydock.EventToolCall || events[2].JobID != j.ID || events[2].Time.IsZero() {
			t.Errorf("event 3 = %+v", events[2])
		}
	})
}

// cuttingProxy stands in front of a server and cuts each of the next n
// event streams after its first event (comments and retry hints pass), as a
// flaky network would; it
// records where every stream request asked to resume.
func cuttingProxy(t *testing.T, upstream string, n int) (url string, resumes func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, upstream+r.URL.RequestURI(), nil)
		req.Header = r.Header.Clone()
		resume := r.Header.Get("Last-Event-ID")
		if resume == "" {
			resume = r.URL.Query().Get("after")
		}
		mu.Lock()
		seen = append(seen, resume)
		cut := n > 0
		n--
		mu.Unlock()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		rc := http.NewResponseController(w)
		br := bufio.NewReader(resp.Body)
		event := false // the block read so far has an id: it is an event
		for {
			line, err := br.ReadString('\n')
			io.WriteString(w, line)
			if err != nil {
				return
			}
			event = event || strings.HasPrefix(line, "id:")
			if line == "\n" {
				rc.Flush()
				if cut && event {
					if conn, _, err := rc.Hijack(); err == nil {
						conn.Close()
					}
					return
				}
			}
		}
	}))
	t.Cleanup(hs.Close)
	return hs.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// A stream cut by the network between client and server resumes where it
// stopped, on either server: the first request asks from the caller's
// position, the reconnection (after the server's retry hint) sends
// Last-Event-ID, and the server starts after it.
func TestStreamEventsResumeThroughACutNetwork(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, _ *client.Client) {
		j := srv.AddJob(t, drydock.JobSpec{Task: "t"}, time.Now())             // 1
		srv.SetStatus(t, j.ID, drydock.StatusRunning, "")                      // 2
		srv.Emit(t, j.ID, drydock.EventLog, map[string]string{"message": "a"}) // 3
		srv.SetStatus(t, j.ID, drydock.StatusComplete, "")                     // 4
		url, resumes := cuttingProxy(t, srv.URL(), 1)
		c := client.FastRetries(client.New(url, srv.Token()), 10*time.Second)

		fn, got := collect()
		if err := c.StreamEvents(t.Context(), j.ID, 1, fn); err != nil {
			t.Fatalf("StreamEvents: %v", err)
		}
		if diff := cmp.Diff([]int64{2, 3, 4}, seqs(got())); diff != "" {
			t.Errorf("seqs (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"1", "2"}, resumes()); diff != "" {
			t.Errorf("resume positions (-want +got):\n%s", diff)
		}
	})
}

// sseHandler serves one scripted answer per connection; connections beyond
// the script get the last one.
func sseHandler(t *testing.T, script ...string) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var lastIDs []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "text/event-stream" {
			http.Error(w, "want a stream request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		n := len(lastIDs)
		lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		body := script[min(n, len(script)-1)]
		if body == "HANG" {
			w.WriteHeader(http.StatusOK)
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
			return
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(hs.Close)
	return hs, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lastIDs...)
	}
}

func ev(seq int64, typ string) string {
	return fmt.Sprintf(`{"job_id":"j1","seq":%d,"type":%q,"time":"2026-11-22T08:00:00Z","data":{}}`, seq, typ)
}

func TestSSEParsing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		script   []string
		wantSeqs []int64
		wantIDs  []string
	}{{
		name: "comments, CRLF, unknown fields, id without space",
		script: []string{": ping\r\n\r\nid:1\r\nevent: status\r\nfoo: bar\r\ndata: " + ev(1, "status") + "\r\n\r\n" +
			": ping\n\nevent: end\ndata: {}\n\n"},
		wantSeqs: []int64{1},
		wantIDs:  []string{""},
	}, {
		name: "data split over lines is joined with newlines",
		script: []string{"id: 1\nevent: log\ndata: {\"job_id\":\"j1\",\"seq\":1,\ndata: \"type\":\"log\",\"data\":{\"message\":\"x\"}}\n\n" +
			"event: end\ndata: {}\n\n"},
		wantSeqs: []int64{1},
		wantIDs:  []string{""},
	}, {
		name:     "seq from the id when the data lacks it; type from the event name",
		script:   []string{"id: 7\nevent: summary\ndata: {\"data\":{\"summary\":\"ok\"}}\n\nevent: end\n\n"},
		wantSeqs: []int64{7},
		wantIDs:  []string{""},
	}, {
		name: "a resent event after a reconnect is dropped",
		script: []string{
			"id: 1\ndata: " + ev(1, "status") + "\n\nid: 2\ndata: " + ev(2, "log") + "\n\n",
			"id: 2\ndata: " + ev(2, "log") + "\n\nid: 3\ndata: " + ev(3, "log") + "\n\nevent: end\n\n",
		},
		wantSeqs: []int64{1, 2, 3},
		wantIDs:  []string{"", "2"},
	}, {
		name: "an end that never came: the stream closes and is resumed",
		script: []string{
			"id: 1\ndata: " + ev(1, "status") + "\n\nid: 2\ndata: " + ev(2, "log"),
			"id: 2\ndata: " + ev(2, "log") + "\n\nevent: end\n\n",
		},
		wantSeqs: []int64{1, 2},
		wantIDs:  []string{"", "1"},
	}, {
		name:     "retry field is honoured without breaking the stream",
		script:   []string{"retry: 10\n\nid: 1\ndata: " + ev(1, "status") + "\n\n", "event: end\n\n"},
		wantSeqs: []int64{1},
		wantIDs:  []string{"", "1"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hs, ids := sseHandler(t, tt.script...)
			c := client.FastRetries(client.New(hs.URL, ""), 10*time.Second)
			fn, got := collect()
			if err := c.StreamEvents(t.Context(), "j1", 0, fn); err != nil {
				t.Fatalf("StreamEvents: %v", err)
			}
			if diff := cmp.Diff(tt.wantSeqs, seqs(got())); diff != "" {
				t.Errorf("seqs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantIDs, ids()); diff != "" {
				t.Errorf("Last-Event-ID per connection (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStreamEventsReconnectsASilentConnection(t *testing.T) {
	t.Parallel()
	hs, ids := sseHandler(t, "HANG", "id: 1\ndata: "+ev(1, "status")+"\n\nevent: end\n\n")
	c := client.FastRetries(client.New(hs.URL, ""), 100*time.Millisecond)
	fn, got := collect()
	if err := c.StreamEvents(t.Context(), "j1", 0, fn); err != nil {
		t.Fatalf("StreamEvents: %v", err)
	}
	if len(got()) != 1 || len(ids()) != 2 {
		t.Errorf("got %d events over %d connections, want 1 over 2", len(got()), len(ids()))
	}
}

func TestStreamEventsErrors(t *testing.T) {
	t.Parallel()
	fn, _ := collect()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		client.FastRetries(c, 10*time.Second)
		if err := c.StreamEvents(t.Context(), "nope", 0, fn); drydock.ErrorCode(err) != drydock.ENOTFOUND {
			t.Errorf("unknown job: %v, want not_found", err)
		}

		j := srv.AddJob(t, drydock.JobSpec{Task: "t"}, time.Now())
		stop := errors.New("seen enough")
		err := c.StreamEvents(t.Context(), j.ID, 0, func(*drydock.Event) error { return stop })
		if err != stop {
			t.Errorf("fn's error: StreamEvents returned %v, want it unchanged", err)
		}

		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		err = c.StreamEvents(ctx, j.ID, 0, fn)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("ctx ended: %v, want DeadlineExceeded", err)
		}
	})

	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"events": []}`)
	}))
	t.Cleanup(plain.Close)
	err := client.New(plain.URL, "").StreamEvents(t.Context(), "j1", 0, fn)
	if drydock.ErrorCode(err) != drydock.ENOTIMPLEMENTED {
		t.Errorf("JSON instead of a stream: %v, want not_implemented", err)
	}

	hs, _ := sseHandler(t, "id: 1\ndata: {not json\n\n")
	err = client.New(hs.URL, "").StreamEvents(t.Context(), "j1", 0, fn)
	if err == nil || !strings.Contains(err.Error(), "malformed event") {
		t.Errorf("malformed data: %v, want a malformed event error", err)
	}
}

func TestStreamEventsRidesOutAServerRestart(t *testing.T) {
	t.Parallel()
	// The first connection delivers an event and drops; the next two attempts
	// are answered 503 as by a server that is starting; then the stream ends.
	var n atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: 1\ndata: "+ev(1, "status")+"\n\n")
		case 2, 3:
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error": {"code": "unavailable", "message": "starting"}}`)
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: 2\ndata: "+ev(2, "status")+"\n\nevent: end\n\n")
		}
	}))
	t.Cleanup(hs.Close)
	c := client.FastRetries(client.New(hs.URL, ""), 10*time.Second)
	fn, got := collect()
	if err := c.StreamEvents(t.Context(), "j1", 0, fn); err != nil {
		t.Fatalf("StreamEvents: %v", err)
	}
	if diff := cmp.Diff([]int64{1, 2}, seqs(got())); diff != "" || n.Load() != 4 {
		t.Errorf("seqs (-want +got):\n%s\nconnections %d, want 4", diff, n.Load())
	}
}

func TestWait(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, c *client.Client) {
		j := srv.AddJob(t, drydock.JobSpec{Task: "t"}, time.Now())
		go func() {
			time.Sleep(20 * time.Millisecond)
			srv.SetStatus(t, j.ID, drydock.StatusRunning, "")
			srv.SetArchive(t, j.ID, map[string]string{"x": "x"})
			srv.SetStatus(t, j.ID, drydock.StatusError, "model refused")
		}()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		got, err := c.Wait(ctx, j.ID)
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
		if got.Status != drydock.StatusError || got.Error != "model refused" || got.DownloadURL == "" {
			t.Errorf("Wait = %+v, want error status, its message and a download URL", got)
		}

		// Already finished: no stream needed.
		if got, err := c.Wait(t.Context(), j.ID); err != nil || got.Status != drydock.StatusError {
			t.Errorf("second Wait = %v, %v", got, err)
		}
		if _, err := c.Wait(t.Context(), "nope"); drydock.ErrorCode(err) != drydock.ENOTFOUND {
			t.Errorf("Wait(nope) = %v, want not_found", err)
		}
	})
}

func TestWaitFallsBackToPolling(t *testing.T) {
	t.Parallel()
	// A proxy that does not pass streams: events answer as plain JSON, so
	// Wait must poll the job.
	var polls atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/events") {
			fmt.Fprint(w, `{"events": [], "next_after": 0, "done": false}`)
			return
		}
		status := "running"
		if polls.Add(1) >= 4 {
			status = "complete"
		}
		fmt.Fprintf(w, `{"job_id": "j1", "status": %q}`, status)
	}))
	t.Cleanup(hs.Close)
	c := client.FastRetries(client.New(hs.URL, ""), 10*time.Second)
	got, err := c.Wait(t.Context(), "j1")
	if err != nil || got.Status != drydock.StatusComplete {
		t.Fatalf("Wait = %v, %v; want complete", got, err)
	}
	if polls.Load() != 4 {
		t.Errorf("%d polls, want 4", polls.Load())
	}
}

// Both servers open a stream with the same reconnection hint, which the
// client honours after a cut: a fake without it would let the CLI's tests
// reconnect sooner than a real server allows.
func TestStreamsOpenWithARetryHint(t *testing.T) {
	t.Parallel()
	forEachServer(t, func(t *testing.T, srv apiServer, _ *client.Client) {
		j := srv.AddJob(t, drydock.JobSpec{Task: "t"}, time.Now())
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL()+"/v1/jobs/"+j.ID+"/events", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		first, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || first != "retry: 2000\n" || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Errorf("stream opened %q (%v) as %q; want retry: 2000 as text/event-stream", first, err, resp.Header.Get("Content-Type"))
		}
	})
}
