package llmtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
)

// Faults: what a provider retries, what it gives up on, and how it says so.

// RetriesRateLimit: 429s are retried until an answer comes.
func (s *suite) retriesRateLimit(t *testing.T) {
	srv, p := s.setup(t, Options{Turns: []Turn{{Fault: RateLimit}, {Fault: RateLimit}, {Text: "finally"}}}, Config{})
	res, err := s.complete(t, p, hello)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "finally" || len(srv.Requests()) != 3 {
		t.Errorf("text %q after %d requests; want finally after 3", res.Text, len(srv.Requests()))
	}
}

// RetriesServerErrorsAndDrops: 500, 529 and a dropped connection are retried.
func (s *suite) retriesServerErrorsAndDrops(t *testing.T) {
	srv, p := s.setup(t, Options{Turns: []Turn{{Fault: ServerError}, {Fault: Drop}, {Fault: Overloaded}, {Text: "back"}}}, Config{MaxRetries: 3})
	res, err := s.complete(t, p, hello)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "back" || len(srv.Requests()) != 4 {
		t.Errorf("text %q after %d requests; want back after 4", res.Text, len(srv.Requests()))
	}
}

// RetriesAnswersCutOff: a 200 whose body is cut off half way is retried.
func (s *suite) retriesAnswersCutOff(t *testing.T) {
	srv, p := s.setup(t, Options{Turns: []Turn{{Text: "lost", Fault: Cut}, {Text: "lost again", Fault: Cut}, {Text: "whole"}}}, Config{MaxRetries: 3})
	res, err := s.complete(t, p, hello)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "whole" || len(srv.Requests()) != 3 {
		t.Errorf("text %q after %d requests; want whole after 3", res.Text, len(srv.Requests()))
	}
}

// AnswersCutOffUntilRetriesRunOut: answers that keep being cut off end, after
// the retries, in a retryable unavailable error.
func (s *suite) answersCutOffUntilRetriesRunOut(t *testing.T) {
	srv, p := s.setup(t, Options{Turns: Repeat(3, Turn{Text: "never whole", Fault: Cut})}, Config{MaxRetries: 2})
	_, err := s.complete(t, p, hello)
	if drydock.ErrorCode(err) != drydock.EUNAVAILABLE || !drydock.IsRetryable(err) {
		t.Fatalf("error %v (code %q); want %s", err, drydock.ErrorCode(err), drydock.EUNAVAILABLE)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d requests; want 1 + 2 retries", n)
	}
}

// RetriesTimeout: an attempt slower than the request timeout is cut and
// retried.
func (s *suite) retriesTimeout(t *testing.T) {
	srv, p := s.setup(t, Options{Turns: []Turn{{Text: "too late", Delay: 5 * time.Second}, {Text: "in time"}}}, Config{RequestTimeout: 300 * time.Millisecond})
	start := time.Now()
	res, err := s.complete(t, p, hello)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "in time" || len(srv.Requests()) != 2 {
		t.Errorf("text %q after %d requests; want in time after 2", res.Text, len(srv.Requests()))
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("took %s; the slow attempt was not cut at its timeout", d)
	}
}

// UnauthorizedIsClearAndNotRetried: a refused key is one request, an
// unauthorized error that names the variable to check, and never (part of)
// the key.
func (s *suite) unauthorizedIsClearAndNotRetried(t *testing.T) {
	wrong := "sk-wrong-key-abcdefghijklmnop"
	srv, p := s.setup(t, Options{}, Config{APIKey: wrong})
	_, err := s.complete(t, p, hello)
	if drydock.ErrorCode(err) != drydock.EUNAUTHORIZED {
		t.Fatalf("error %v (code %q); want %s", err, drydock.ErrorCode(err), drydock.EUNAUTHORIZED)
	}
	msg := drydock.ErrorMessage(err)
	if !strings.Contains(msg, "_API_KEY") || !strings.Contains(msg, "401") {
		t.Errorf("message %q does not say which key to check", msg)
	}
	if strings.Contains(err.Error(), wrong[:8]) || strings.Contains(err.Error(), "***") {
		t.Errorf("error %q repeats (part of) the key", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests; a 401 must not be retried", n)
	}
}

// KeepsFailing: a server that keeps failing ends, after the retries, in a
// retryable unavailable error naming the status.
func (s *suite) keepsFailing(t *testing.T) {
	srv, p := s.setup(t, Options{Turns: Repeat(3, Turn{Fault: ServerError})}, Config{MaxRetries: 2})
	_, err := s.complete(t, p, hello)
	if drydock.ErrorCode(err) != drydock.EUNAVAILABLE || !drydock.IsRetryable(err) {
		t.Fatalf("error %v; want %s", err, drydock.EUNAVAILABLE)
	}
	if !strings.Contains(drydock.ErrorMessage(err), "500") {
		t.Errorf("message %q does not name the status", drydock.ErrorMessage(err))
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d requests; want 1 + 2 retries", n)
	}
}

// BadRequestSaysWhy: a 400 is not retried and its error carries the API's
// reason.
func (s *suite) badRequestSaysWhy(t *testing.T) {
	srv, p := s.setup(t, Options{Turns: []Turn{{Fault: BadRequest, Text: "prompt is too long: 300000 tokens > 200000 maximum"}}}, Config{})
	_, err := s.complete(t, p, hello)
	if drydock.ErrorCode(err) != drydock.EINVALID || !strings.Contains(drydock.ErrorMessage(err), "prompt is too long") {
		t.Fatalf("error %v; want %s naming the reason", err, drydock.EINVALID)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests; a 400 must not be retried", n)
	}
}

// Cancel: cancelling the context ends a call at once with the context's error.
func (s *suite) cancel(t *testing.T) {
	_, p := s.setup(t, Options{Turns: []Turn{{Text: "never", Delay: 20 * time.Second}}}, Config{})
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := p.Complete(ctx, &llm.Request{Model: Model, Messages: hello.Messages})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v; want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancel took %s", d)
	}
}
