package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/drydockhq/drydock"
)

// maxSSELine bounds one line of an event stream. An event's data is at most
// drydock.MaxEventDataBytes of JSON; escaping can grow it, hence the margin.
const maxSSELine = 4*drydock.MaxEventDataBytes + 4096

// StreamEvents calls fn with each event of job id whose sequence number is
// greater than after, in order and as the server appends them. It returns nil
// once the server ends the stream because the job is terminal and every event
// was sent.
//
// A connection that drops, goes silent, or meets a server that is restarting
// is resumed with Last-Event-ID after a backoff, so fn sees every event once,
// until the stream ends or ctx does. A server that cannot be reached at the
// first attempt, and answers such as ENOTFOUND or EUNAUTHORIZED, are returned
// at once. An error from fn stops the stream and is returned as is.
func (c *Client) StreamEvents(ctx context.Context, id string, after int64, fn func(*drydock.Event) error) error {
	path, err := jobPath(id, "/events")
	if err != nil {
		return err
	}
	s := &sseStream{c: c, path: path, last: after, fn: fn, delay: c.backoffMin}
	connected := false
	for {
		progressed, err := s.connect(ctx, &connected)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("stream events of %s: %w", id, context.Cause(ctx))
		}
		var cb callbackError
		if errors.As(err, &cb) {
			return cb.err
		}
		if !s.retryable(err, connected) {
			return err
		}
		if progressed {
			s.delay = c.backoffMin
		}
		if s.retryMin > 0 && s.delay < s.retryMin {
			s.delay = s.retryMin
		}
		t := time.NewTimer(jitter(s.delay))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("stream events of %s: %w", id, context.Cause(ctx))
		case <-t.C:
		}
		s.delay = min(s.delay*2, c.backoffMax)
	}
}

// callbackError carries the error of the caller's fn through the stream
// machinery so it is never mistaken for a network failure and retried.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

// errStreamDropped is a stream that ended or went silent before the server's
// end event.
var errStreamDropped = errors.New("event stream dropped")

type sseStream struct {
	c        *Client
	path     string
	last     int64 // sequence number of the last event given to fn
	fn       func(*drydock.Event) error
	delay    time.Duration
	retryMin time.Duration // from the server's "retry:" field
}

func (s *sseStream) retryable(err error, connected bool) bool {
	if errors.Is(err, errStreamDropped) {
		return true
	}
	var ce *ConnError
	var fe *ForeignAnswerError
	if errors.As(err, &ce) || errors.As(err, &fe) {
		// Refused, or a page that is not the API's (a proxy's 502), at
		// the very first attempt means no Drydock server is there; later
		// it usually means the server is restarting.
		return connected && drydock.IsRetryable(err)
	}
	var de *drydock.Error
	if errors.As(err, &de) {
		return de.Code == drydock.EUNAVAILABLE
	}
	return false
}

// connect runs one connection of the stream. It returns nil when the server
// sent the end event; progressed reports whether any event reached fn.
func (s *sseStream) connect(ctx context.Context, connected *bool) (progressed bool, err error) {
	connCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var idle atomic.Bool
	timer := time.AfterFunc(s.c.streamIdle, func() {
		idle.Store(true)
		cancel()
	})
	defer timer.Stop()

	q := url.Values{"stream": {"true"}}
	hdr := http.Header{"Accept": {"text/event-stream"}, "Cache-Control": {"no-cache"}}
	if s.last > 0 {
		q.Set("after", strconv.FormatInt(s.last, 10))
		hdr.Set("Last-Event-ID", strconv.FormatInt(s.last, 10))
	}
	resp, err := s.c.do(connCtx, http.MethodGet, s.path, q, nil, hdr)
	if err != nil {
		if idle.Load() && ctx.Err() == nil {
			return false, errStreamDropped
		}
		return false, err
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		if _, err := s.c.jsonBody(resp); err != nil {
			return false, err
		}
		// A server (or a proxy) that does not stream: Wait polls.
		return false, drydock.Errorf(drydock.ENOTIMPLEMENTED, "the server answered %s with %q instead of an event stream", s.path, mt)
	}
	*connected = true

	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var (
		evType string
		evID   string
		data   bytes.Buffer
	)
	for {
		line, err := readLine(br)
		if err != nil {
			if ctx.Err() != nil {
				return progressed, ctx.Err()
			}
			if !errors.Is(err, errLineTooLong) {
				return progressed, fmt.Errorf("%w: %v", errStreamDropped, err)
			}
			return progressed, err
		}
		timer.Reset(s.c.streamIdle)
		if len(line) == 0 {
			if evType == "" && data.Len() == 0 {
				continue
			}
			ended, err := s.dispatch(evType, evID, bytes.TrimSuffix(data.Bytes(), []byte("\n")))
			if err != nil {
				return progressed, err
			}
			if ended {
				return progressed, nil
			}
			progressed = true
			evType, evID = "", ""
			data.Reset()
			continue
		}
		if line[0] == ':' {
			continue // a comment: the server's keep-alive ping
		}
		field, value, _ := strings.Cut(string(line), ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			evType = value
		case "data":
			data.WriteString(value)
			data.WriteByte('\n')
		case "id":
			evID = value
		case "retry":
			if ms, err := strconv.Atoi(value); err == nil && ms > 0 {
				s.retryMin = time.Duration(ms) * time.Millisecond
			}
		}
	}
}

// dispatch hands one complete SSE message to fn. ended reports the server's
// end event.
func (s *sseStream) dispatch(evType, evID string, data []byte) (ended bool, err error) {
	if evType == "end" {
		return true, nil
	}
	var e drydock.Event
	if err := json.Unmarshal(data, &e); err != nil {
		return false, fmt.Errorf("event stream of %s: malformed event %q: %w", s.path, evID, err)
	}
	if e.Seq == 0 {
		e.Seq, _ = strconv.ParseInt(evID, 10, 64)
	}
	if e.Type == "" && evType != "" && evType != "message" {
		e.Type = drydock.EventType(evType)
	}
	// After a reconnect a server may resend what it sent just before the
	// drop; fn must see each event once.
	if e.Seq != 0 && e.Seq <= s.last {
		return false, nil
	}
	if err := s.fn(&e); err != nil {
		return false, callbackError{err}
	}
	if e.Seq > s.last {
		s.last = e.Seq
	}
	return false, nil
}

var errLineTooLong = errors.New("event stream line too long")

// readLine returns one line without its line ending ("\n" or "\r\n").
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxSSELine {
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return nil, err
		}
		line = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
		return line, nil
	}
}

// Wait blocks until job id is terminal and returns it. It follows the event
// stream, which tells it the moment the job ends, and falls back to polling
// when the stream is not available (an older server or a proxy that buffers
// streams).
func (c *Client) Wait(ctx context.Context, id string) (*drydock.Job, error) {
	j, err := c.Job(ctx, id)
	if err != nil {
		return nil, err
	}
	if j.Status.Terminal() {
		return j, nil
	}
	err = c.StreamEvents(ctx, id, 0, func(*drydock.Event) error { return nil })
	if err == nil {
		if j, err = c.Job(ctx, id); err == nil && j.Status.Terminal() {
			return j, nil
		}
	}
	if ctx.Err() != nil {
		return nil, err
	}
	switch drydock.ErrorCode(err) {
	case drydock.ENOTFOUND, drydock.EUNAUTHORIZED, drydock.EFORBIDDEN:
		return nil, err
	}
	return c.poll(ctx, id)
}

func (c *Client) poll(ctx context.Context, id string) (*drydock.Job, error) {
	delay := c.pollMin
	for {
		j, err := c.Job(ctx, id)
		switch {
		case err == nil && j.Status.Terminal():
			return j, nil
		case err != nil && (ctx.Err() != nil || !drydock.IsRetryable(err)):
			return nil, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("wait for %s: %w", id, context.Cause(ctx))
		case <-t.C:
		}
		delay = min(delay*2, c.pollMax)
	}
}
