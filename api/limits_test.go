package api_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock/api"
)

// openStream starts an SSE stream on a job's events and returns once the
// server has answered; the stream stays open until cancel.
func openStream(t *testing.T, b *liveBundle, id, token string) (status int, body string, closeStream func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "GET", b.url+"/v1/jobs/"+id+"/events?stream=1", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return resp.StatusCode, string(data), func() {}
	}
	// The first bytes (the retry hint) show the stream is being served.
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	if !strings.HasPrefix(line, "retry:") {
		t.Fatalf("stream starts with %q", line)
	}
	return 200, "", func() { cancel(); resp.Body.Close() }
}

// Event streams are bounded per token and per server: the one over a limit
// gets 429 with a message, other users are unaffected by one user's
// streams, a closed stream frees its slot, and the server keeps answering
// ordinary requests while the streams are open.
func TestEventStreamLimits(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, func(c *api.Config) { c.MaxStreamsPerUser, c.MaxStreams = 3, 5 })
	aj := b.runningJob(t, b.alice, `{"task": "a"}`, nil)
	bj := b.runningJob(t, b.bob, `{"task": "b"}`, nil)

	var alice []func()
	for i := range 3 {
		code, body, cancel := openStream(t, b, aj.ID, b.alice)
		if code != 200 {
			t.Fatalf("alice's stream %d: %d %s", i+1, code, body)
		}
		alice = append(alice, cancel)
	}
	code, body, _ := openStream(t, b, aj.ID, b.alice)
	if code != http.StatusTooManyRequests || errorCode(t, []byte(body)) != "too_many_requests" {
		t.Fatalf("alice's 4th stream: %d %s", code, body)
	}
	// Paging the same events is not a stream and is not limited.
	if resp, data := b.get(t, "/v1/jobs/"+aj.ID+"/events", b.alice); resp.StatusCode != 200 {
		t.Errorf("alice's event page at her stream limit: %d %s", resp.StatusCode, data)
	}
	// Bob has slots of his own, until the server's total is reached.
	for i := range 2 {
		code, body, cancel := openStream(t, b, bj.ID, b.bob)
		if code != 200 {
			t.Fatalf("bob's stream %d: %d %s", i+1, code, body)
		}
		defer cancel()
	}
	code, body, _ = openStream(t, b, aj.ID, b.admin)
	if code != http.StatusTooManyRequests || !strings.Contains(body, "the server has 5") {
		t.Fatalf("admin's stream with the server full: %d %s", code, body)
	}
	// Still responsive with every slot taken.
	for _, p := range []string{"/healthz", "/readyz", "/v1/jobs/" + aj.ID} {
		if resp, data := b.get(t, p, b.alice); resp.StatusCode != 200 {
			t.Errorf("%s with the stream limit reached: %d %s", p, resp.StatusCode, data)
		}
	}
	// A closed stream gives its slot back (the server notices the
	// disconnect on its next write or wake-up).
	alice[0]()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body, cancel := openStream(t, b, aj.ID, b.alice)
		if code == 200 {
			cancel()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's slot not freed 10s after her stream closed: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, c := range alice[1:] {
		c()
	}
}

// Desktop WebSockets count against the same limit as event streams.
func TestLiveViewLimit(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, func(c *api.Config) { c.MaxStreamsPerUser = 2 })
	_, l := desktopJob(t, b, &fakeVNC{w: 16, h: 8}, "sb-limit", false)
	var open []*viewer
	defer func() {
		for _, v := range open {
			v.close()
		}
	}()
	for i := range 2 {
		v, err := dialViewer(t.Context(), l.WebSocketURL, nil, "")
		if err != nil {
			t.Fatalf("viewer %d: %v", i+1, err)
		}
		open = append(open, v)
	}
	if _, err := dialViewer(t.Context(), l.WebSocketURL, nil, ""); err == nil || !strings.Contains(err.Error(), "429") {
		t.Fatalf("third viewer at a limit of two: %v", err)
	}
	// The open views still work.
	for i, v := range open {
		if err := v.frame(); err != nil {
			t.Errorf("viewer %d after the refusal: %v", i+1, err)
		}
	}
}

// Bodies over the limit get 413 on every route that reads a JSON body,
// without the server reading them whole.
func TestBodyLimit(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	j := b.runningJob(t, b.alice, `{"task": "x", "profile": "desktop"}`, nil)
	huge := `{"task": "` + strings.Repeat("x", 1<<20) + `"}`
	for _, path := range []string{"/schedule", "/submit", "/v1/jobs", "/v1/jobs/" + j.ID + "/desktop/link", "/v1/jobs/" + j.ID + "/jupyter/link"} {
		resp, data := b.send(t, "POST", path, b.alice, huge)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || errorCode(t, data) != "too_large" {
			t.Errorf("POST %s with a body over 1 MiB: %d %s", path, resp.StatusCode, data)
		}
	}
	// An endless body: the answer comes after at most the limit is read.
	pr, pw := io.Pipe()
	go func() {
		chunk := []byte(strings.Repeat("x", 64<<10))
		pw.Write([]byte(`{"task": "`))
		for {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
	}()
	defer pw.Close()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", b.url+"/v1/jobs", pr)
	req.Header.Set("Authorization", "Bearer "+b.alice)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("endless body: %d", resp.StatusCode)
	}
	if jobs, _ := b.get(t, "/v1/jobs", b.alice); jobs.StatusCode != 200 {
		t.Errorf("list after the big bodies: %d", jobs.StatusCode)
	}
}
