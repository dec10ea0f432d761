package client_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client"
)

// nginxPage is the kind of page a reverse proxy answers while the server
// behind it is down, padded the way real ones are.
var nginxPage = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.22.1</center>\r\n" +
	strings.Repeat("<!-- a padding to disable MSIE and Chrome friendly error page -->\r\n", 100) + "</body>\r\n</html>\r\n"

// foreignServer answers every request with status, content type and body,
// and counts the requests.
func foreignServer(t *testing.T, status int, contentType, body string) (url string, requests *atomic.Int32) {
	t.Helper()
	requests = new(atomic.Int32)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		} else {
			w.Header()["Content-Type"] = nil // no sniffing: no header at all
		}
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(hs.Close)
	return hs.URL, requests
}

// An answer that is not the API's becomes a short error that says what came
// back and what to check, never the page itself.
func TestForeignAnswersAreShortErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		wantCode    string
		want        []string
	}{
		{"a proxy's 502 page", http.StatusBadGateway, "text/html", nginxPage, drydock.EUNAVAILABLE,
			[]string{"answered 502 Bad Gateway with text/html", `("502 Bad Gateway")`, "is it a Drydock server, or is a proxy in front of it failing?", "DRYDOCK_URL or --url"}},
		{"another site's 404", http.StatusNotFound, "text/html; charset=utf-8", "<!DOCTYPE html><html><body><h1>Not here</h1><p>Try the home page.</p></body></html>", drydock.ENOTFOUND,
			[]string{"answered 404 Not Found with text/html", `("Not here Try the home page.")`, "is it a Drydock server?"}},
		{"plain text", http.StatusNotFound, "text/plain; charset=utf-8", "404 page not found\n", drydock.ENOTFOUND,
			[]string{"404 Not Found with text/plain", `("404 page not found")`}},
		{"no body, no type", http.StatusTeapot, "", "", drydock.EINTERNAL,
			[]string{"answered 418 I'm a teapot with no content type, not the Drydock API's JSON"}},
		{"JSON of another API", http.StatusUnauthorized, "application/json", `{"message": "Bad credentials"}`, drydock.EUNAUTHORIZED,
			[]string{"401 Unauthorized with application/json", `("{"message": "Bad credentials"}")`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url, _ := foreignServer(t, tt.status, tt.contentType, tt.body)
			_, err := client.New(url, "").Job(t.Context(), "j1")
			var fe *client.ForeignAnswerError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *client.ForeignAnswerError", err)
			}
			if got := drydock.ErrorCode(err); got != tt.wantCode {
				t.Errorf("code %q, want %q", got, tt.wantCode)
			}
			msg := err.Error()
			want := append([]string{"GET /v1/jobs/j1: the server at " + url + " answered"}, tt.want...)
			for _, w := range want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
			if len(msg) > 400 || strings.ContainsAny(msg, "\r\n<>") && tt.contentType != "application/json" {
				t.Errorf("error is not short and page-free (%d bytes):\n%s", len(msg), msg)
			}
			if drydock.ErrorMessage(err) != msg {
				t.Errorf("ErrorMessage = %q, want the same text", drydock.ErrorMessage(err))
			}
		})
	}
}

// A hostile page cannot reach the terminal through the error, and its
// excerpt stays short whatever the page.
func TestForeignAnswerExcerptIsEscapedAndBounded(t *testing.T) {
	t.Parallel()
	title := "Login\x1b]52;c;cHduZWQ=\a\x1b[2J\rEVIL\u202eexe\x9b8m" + strings.Repeat("x", 500)
	url, _ := foreignServer(t, http.StatusForbidden, "text/html", "<html><title>"+title+"</title></html>")
	_, err := client.New(url, "").Job(t.Context(), "j1")
	var fe *client.ForeignAnswerError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v is not a *client.ForeignAnswerError", err)
	}
	msg := err.Error()
	for _, bad := range []string{"\x1b", "\a", "\r", "\u202e", "\x9b"} {
		if strings.Contains(msg, bad) {
			t.Errorf("error holds %q raw:\n%q", bad, msg)
		}
	}
	for _, shown := range []string{`Login^[]52;c;cHduZWQ=^G^[[2J EVIL\u202eexe\x9b8m`, "…"} {
		if !strings.Contains(fe.Excerpt, shown) {
			t.Errorf("excerpt %q lacks %q", fe.Excerpt, shown)
		}
	}
	if n := len([]rune(fe.Excerpt)); n > 100 {
		t.Errorf("excerpt of %d runes", n)
	}
}

// A web server that answers 200 with a page for every path is not taken for
// a Drydock server: reads say so instead of "invalid character '<'", and
// Schedule does not retry a request that created nothing.
func TestForeignSuccessAnswersAreNamed(t *testing.T) {
	t.Parallel()
	page := "<!doctype html><html><head><title>Welcome to nginx!</title></head><body>" + strings.Repeat("<p>hello</p>", 1000) + "</body></html>"
	url, requests := foreignServer(t, http.StatusOK, "text/html", page)
	c := client.New(url, "")
	check := func(what string, err error) {
		t.Helper()
		var fe *client.ForeignAnswerError
		if !errors.As(err, &fe) {
			t.Fatalf("%s: error %v is not a *client.ForeignAnswerError", what, err)
		}
		if fe.StatusCode != http.StatusOK || fe.Excerpt != "Welcome to nginx!" || !strings.Contains(err.Error(), "is it a Drydock server?") {
			t.Errorf("%s: %v", what, err)
		}
	}
	_, err := c.Job(t.Context(), "j1")
	check("Job", err)
	_, err = c.Jobs(t.Context(), client.ListOptions{})
	check("Jobs", err)
	_, err = c.Trajectory(t.Context(), "j1")
	check("Trajectory", err)
	err = c.StreamEvents(t.Context(), "j1", 0, func(*drydock.Event) error { return nil })
	check("StreamEvents", err)
	before := requests.Load()
	_, err = c.Schedule(t.Context(), drydock.JobSpec{Task: "t"})
	check("Schedule", err)
	if n := requests.Load() - before; n != 1 {
		t.Errorf("Schedule sent %d requests to a server that is not Drydock; want 1", n)
	}
}

// An event stream whose very first answer is a proxy's 502 page stops at
// once, as a refused connection does, instead of retrying for ever against
// what may not be a Drydock server at all.
func TestStreamStopsAtAForeignFirstAnswer(t *testing.T) {
	t.Parallel()
	url, requests := foreignServer(t, http.StatusBadGateway, "text/html", nginxPage)
	c := client.FastRetries(client.New(url, ""), time.Minute)
	err := c.StreamEvents(t.Context(), "j1", 0, func(*drydock.Event) error { return nil })
	var fe *client.ForeignAnswerError
	if !errors.As(err, &fe) || fe.StatusCode != http.StatusBadGateway {
		t.Fatalf("error %v, want a *client.ForeignAnswerError of 502", err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
