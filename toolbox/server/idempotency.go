package server

import (
	"container/list"
	"log/slog"
	"net/http"
	"sync"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// maxRequestIDLen bounds the ids kept in memory.
const maxRequestIDLen = 128

// idempotency remembers the first response to each request id so that a
// retried mutating request is answered without running twice. Finished
// entries live in an LRU bounded by count and bytes; entries still running
// are never evicted, so a retry always finds the attempt it repeats.
type idempotency struct {
	mu       sync.Mutex
	entries  map[string]*idemEntry
	lru      *list.List // finished entries, most recent first
	max      int
	maxBytes int64
	maxBody  int
	bytes    int64
}

type idemEntry struct {
	id          string
	fingerprint string
	done        chan struct{}
	elem        *list.Element

	// Set when done is closed.
	status   int
	header   http.Header
	body     []byte
	overflow bool // the response was larger than maxBody and was not kept
	dropped  bool // the attempt was abandoned; a retry runs afresh
}

func newIdempotency(max int, maxBytes int64, maxBody int) *idempotency {
	return &idempotency{entries: map[string]*idemEntry{}, lru: list.New(), max: max, maxBytes: maxBytes, maxBody: maxBody}
}

func (i *idempotency) serve(w http.ResponseWriter, r *http.Request, id string, log *slog.Logger, next http.Handler) {
	if len(id) > maxRequestIDLen {
		writeError(w, r, log, drydock.Errorf(drydock.EINVALID, "%s is longer than %d characters", toolbox.HeaderRequestID, maxRequestIDLen))
		return
	}
	fp := r.Method + " " + r.URL.RequestURI()
	for {
		i.mu.Lock()
		e, ok := i.entries[id]
		if !ok {
			e = &idemEntry{id: id, fingerprint: fp, done: make(chan struct{})}
			i.entries[id] = e
			i.mu.Unlock()
			i.run(w, r, e, next)
			return
		}
		if e.elem != nil {
			i.lru.MoveToFront(e.elem)
		}
		i.mu.Unlock()
		if e.fingerprint != fp {
			writeError(w, r, log, drydock.Errorf(drydock.ECONFLICT,
				"request id %q was already used for a different request (%s)", id, e.fingerprint))
			return
		}
		select {
		case <-e.done:
		case <-r.Context().Done():
			return
		}
		if e.dropped {
			continue // the first attempt left nothing behind; run this one
		}
		if e.overflow {
			writeError(w, r, log, drydock.Errorf(drydock.ECONFLICT,
				"the first response to request id %q was too large to keep for a replay; retry with a new id", id))
			return
		}
		h := w.Header()
		for k, v := range e.header {
			h[k] = v
		}
		h.Set(toolbox.HeaderReplayed, "true")
		w.WriteHeader(e.status)
		w.Write(e.body)
		return
	}
}

func (i *idempotency) run(w http.ResponseWriter, r *http.Request, e *idemEntry, next http.Handler) {
	rec := &recorder{ResponseWriter: w, max: i.maxBody, status: http.StatusOK}
	finished := false
	defer func() {
		// A panicking handler (including http.ErrAbortHandler) left no
		// usable response, so a retry must run again rather than hang.
		i.finish(e, rec, !finished || rec.abandoned)
	}()
	next.ServeHTTP(rec, r)
	finished = true
}

func (i *idempotency) finish(e *idemEntry, rec *recorder, drop bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if drop {
		e.dropped = true
		delete(i.entries, e.id)
		close(e.done)
		return
	}
	e.status = rec.status
	e.header = rec.header
	if e.header == nil {
		e.header = rec.Header().Clone()
	}
	e.header.Del(toolbox.HeaderRequestID)
	if rec.overflow {
		e.overflow = true
	} else {
		e.body = rec.body
	}
	close(e.done)
	e.elem = i.lru.PushFront(e)
	i.bytes += e.size()
	for i.lru.Len() > i.max || (i.bytes > i.maxBytes && i.lru.Len() > 1) {
		old := i.lru.Remove(i.lru.Back()).(*idemEntry)
		i.bytes -= old.size()
		delete(i.entries, old.id)
	}
}

func (e *idemEntry) size() int64 { return int64(len(e.body) + len(e.id) + len(e.fingerprint) + 256) }

// recorder passes a response through while keeping a copy for replays.
type recorder struct {
	http.ResponseWriter
	max         int
	status      int
	header      http.Header
	wroteHeader bool
	body        []byte
	overflow    bool
	abandoned   bool
}

func (r *recorder) WriteHeader(status int) {
	if r.wroteHeader {
		return
	}
	r.wroteHeader = true
	r.status = status
	r.header = r.ResponseWriter.Header().Clone()
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(p []byte) (int, error) {
	if !r.wroteHeader {
		r.WriteHeader(http.StatusOK)
	}
	if !r.overflow {
		if len(r.body)+len(p) > r.max {
			r.overflow, r.body = true, nil
		} else {
			r.body = append(r.body, p...)
		}
	}
	return r.ResponseWriter.Write(p)
}

func (r *recorder) Flush() {
	if !r.wroteHeader {
		r.WriteHeader(http.StatusOK)
	}
	http.NewResponseController(r.ResponseWriter).Flush()
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// abandon marks the response as not worth replaying: the handler undid its
// work (e.g. killed a process when the caller went away), so a retry with the
// same id must run again.
func abandon(w http.ResponseWriter) {
	for {
		switch x := w.(type) {
		case *recorder:
			x.abandoned = true
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return
		}
	}
}
