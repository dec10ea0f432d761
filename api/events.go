package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
)

// EventPage is the JSON answer of GET /v1/jobs/{id}/events.
type EventPage struct {
	Events    []*drydock.Event `json:"events"`
	NextAfter int64            `json:"next_after"`
	// Done is true when the job is terminal and this page reached the end of
	// its log: there will be no more events.
	Done bool `json:"done"`
}

func wantsStream(r *http.Request) bool {
	if v := r.URL.Query().Get("stream"); v == "true" || v == "1" {
		return true
	}
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	job, err := s.lookup(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	for k := range q {
		if k != "after" && k != "limit" && k != "stream" {
			s.writeError(w, r, drydock.Errorf(drydock.EINVALID, "unknown query parameter %q; accepted: after, limit, stream", k))
			return
		}
	}
	after, err := parseAfter(q.Get("after"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if wantsStream(r) {
		if v := r.Header.Get("Last-Event-ID"); v != "" {
			if after, err = parseAfter(v); err != nil {
				s.writeError(w, r, drydock.Errorf(drydock.EINVALID, "Last-Event-ID must be an event sequence number"))
				return
			}
		}
		release, err := s.streams.acquire(principalFrom(r.Context()).ID)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		defer release()
		s.streamEvents(w, r, job.ID, after)
		return
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			s.writeError(w, r, drydock.Errorf(drydock.EINVALID, "limit must be a number from 1 to 1000"))
			return
		}
		limit = n
	}
	events, err := s.store.ListEvents(r.Context(), job.ID, after, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page := EventPage{Events: events, NextAfter: after}
	if len(events) > 0 {
		page.NextAfter = events[len(events)-1].Seq
	}
	if page.Events == nil {
		page.Events = []*drydock.Event{}
	}
	// The job was read before the events, so a terminal status here means
	// every event had been written when the page was read.
	page.Done = job.Status.Terminal() && len(events) < limit
	writeJSON(w, http.StatusOK, page)
}

func parseAfter(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, drydock.Errorf(drydock.EINVALID, "after must be a non-negative event sequence number")
	}
	return n, nil
}

// streamEvents sends the job's events as Server-Sent Events from seq after
// on, then follows the log until the job is terminal and fully sent, or
// until the caller's token is revoked (or development mode ends, for an
// anonymous caller): then it closes without the end event, and the client's
// reconnection is refused like any request of that token.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, id string, after int64) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		s.writeError(w, r, drydock.Errorf(drydock.EINTERNAL, "streaming unsupported"))
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()

	ctx, stop := s.revoked.whileValid(r.Context(), principalFrom(r.Context()))
	defer stop()
	ping := time.NewTicker(s.cfg.SSEPing)
	defer ping.Stop()
	poll := time.NewTimer(0)
	defer poll.Stop()
	for {
		// Take the wake-up channel before reading so a write in between is
		// not missed; release it whatever ends the round.
		changed, release := s.store.Changed(id)
		more := func() bool {
			defer release()
			job, err := s.store.GetJob(ctx, id)
			if err != nil {
				return false
			}
			for {
				events, err := s.store.ListEvents(ctx, id, after, 500)
				if err != nil {
					return false
				}
				// Streams can outlive the server's write timeout.
				_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
				for _, e := range events {
					b, _ := json.Marshal(e)
					if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, b); err != nil {
						return false
					}
					after = e.Seq
				}
				flusher.Flush()
				if len(events) < 500 {
					break
				}
			}
			if job.Status.Terminal() {
				fmt.Fprintf(w, "event: end\ndata: {\"status\":%q}\n\n", job.Status)
				flusher.Flush()
				return false
			}
			poll.Reset(s.cfg.SSEPoll)
			select {
			case <-ctx.Done():
				return false
			case <-s.closing:
				return false
			case <-changed:
			case <-poll.C:
			case <-ping.C:
				_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
				if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
					return false
				}
				flusher.Flush()
			}
			return true
		}()
		if !more {
			if errors.Is(context.Cause(ctx), errRevoked) {
				// A comment, which clients skip: an event here would be
				// taken for one of the job's.
				_ = rc.SetWriteDeadline(time.Now().Add(5 * time.Second))
				fmt.Fprint(w, ": closed: the token of this stream was revoked\n\n")
				flusher.Flush()
			}
			return
		}
	}
}
