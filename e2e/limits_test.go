package e2e_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The real binary's HTTP limits, from outside: a client that never finishes
// its headers is cut off, huge headers get 431 and huge bodies 413, and the
// server keeps answering others meanwhile.
func TestServerLimits(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.start()

	t.Run("slow headers are cut off", func(t *testing.T) {
		t.Parallel()
		conns := make([]net.Conn, 20)
		start := time.Now()
		for i := range conns {
			c, err := net.Dial("tcp", s.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, "GET /v1/jobs HTTP/1.1\r\nHost: x\r\n")
			conns[i] = c
		}
		// Trickle a header byte now and then, as a slow-loris client does,
		// on every connection; the server must give up on them all.
		done := make(chan int, len(conns))
		for _, c := range conns {
			go func() {
				r := bufio.NewReader(c)
				for i := 0; ; i++ {
					c.SetReadDeadline(time.Now().Add(time.Second))
					if _, err := r.ReadByte(); err != nil && !isTimeout(err) {
						done <- i // closed by the server (or answered 408 and closed)
						return
					}
					if _, err := c.Write([]byte("X")); err != nil {
						done <- i
						return
					}
					if time.Since(start) > time.Minute {
						done <- -1
						return
					}
				}
			}()
		}
		// Meanwhile others are served.
		if code, b := s.do("GET", "/healthz", "", ""); code != 200 {
			t.Errorf("healthz during the slow clients: %d %s", code, b)
		}
		for range conns {
			if n := <-done; n < 0 {
				t.Fatal("a client that never finished its headers was kept for a minute")
			}
		}
		took := time.Since(start)
		t.Logf("20 slow-header clients cut off after %s", took.Round(100*time.Millisecond))
		if took < 5*time.Second {
			t.Errorf("slow clients cut off after %s: the server does not wait for a slow but legitimate client", took)
		}
	})

	t.Run("huge headers get 431", func(t *testing.T) {
		t.Parallel()
		req, _ := http.NewRequest("GET", s.url()+"/v1/jobs", nil)
		req.Header.Set("X-Big", strings.Repeat("a", 1<<20))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("1 MiB header: %d", resp.StatusCode)
		}
		// Many headers, each small.
		req, _ = http.NewRequest("GET", s.url()+"/v1/jobs", nil)
		for i := range 5000 {
			req.Header.Set(fmt.Sprintf("X-H%d", i), "0123456789012345")
		}
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("5000 headers: %d", resp.StatusCode)
		}
	})

	t.Run("huge bodies get 413", func(t *testing.T) {
		t.Parallel()
		body := `{"task": "` + strings.Repeat("x", 2<<20) + `"}`
		code, b := s.do("POST", "/v1/jobs", "", body)
		if code != http.StatusRequestEntityTooLarge {
			t.Errorf("2 MiB body: %d %s", code, b)
		}
		if code, b := s.do("GET", "/v1/jobs", "", ""); code != 200 || strings.Contains(string(b), "xxxxxxxx") {
			t.Errorf("after the refused body: %d %.200s", code, b)
		}
	})
}

// The real binary's default stream limit: one token holds 64 event streams
// on a running job, the 65th gets 429, the server keeps answering, and
// every stream ends when the job does.
func TestManyEventStreams(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.start()
	id := s.schedule(`{"task": "wait [fake:hang]"}`)
	open := func() (*http.Response, error) {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", s.url()+"/v1/jobs/"+id+"/events?stream=1", nil)
		return http.DefaultClient.Do(req)
	}
	var streams []*http.Response
	defer func() {
		for _, r := range streams {
			r.Body.Close()
		}
	}()
	for i := range 64 {
		resp, err := open()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			resp.Body.Close()
			t.Fatalf("stream %d: %d", i+1, resp.StatusCode)
		}
		streams = append(streams, resp)
	}
	resp, err := open()
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("65th stream: %d %s", resp.StatusCode, body)
	}
	for _, p := range []string{"/healthz", "/v1/jobs/" + id, "/v1/jobs"} {
		if code, b := s.do("GET", p, "", ""); code != 200 {
			t.Errorf("%s with 64 streams open: %d %s", p, code, b)
		}
	}
	if code, b := s.do("POST", "/v1/jobs/"+id+"/cancel", "", ""); code != 202 {
		t.Fatalf("cancel: %d %s", code, b)
	}
	ended := make(chan bool, len(streams))
	for _, r := range streams {
		go func() {
			data, _ := io.ReadAll(r.Body)
			ended <- strings.Contains(string(data), "event: end")
		}()
	}
	for range streams {
		select {
		case ok := <-ended:
			if !ok {
				t.Error("a stream closed without its end event")
			}
		case <-time.After(time.Minute):
			t.Fatal("streams still open a minute after the job was cancelled")
		}
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
