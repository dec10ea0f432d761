package mcp

import (
	"io"
	"net/http"
	"strconv"
	"sync"
)

// HandlerTransport is an http.RoundTripper that serves each request with h
// in this process, streaming the answer as h writes it (no network, no
// buffering of whole answers): the MCP endpoint's client of the API it is
// part of. The request passes through everything h checks, as one that
// came over the network would.
func HandlerTransport(h http.Handler) http.RoundTripper { return handlerTransport{h} }

type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, body: pw, ready: make(chan struct{})}
	in := req.Clone(req.Context())
	in.RequestURI = req.URL.RequestURI()
	if in.Body == nil {
		in.Body = http.NoBody
	}
	in.RemoteAddr = "127.0.0.1:0" // the API's own, in process
	go func() {
		defer func() {
			// A handler that aborts its answer (http.ErrAbortHandler, a
			// download cut short by the reader) must not take the process
			// down: the reader sees a cut body instead.
			if v := recover(); v != nil {
				pw.CloseWithError(io.ErrUnexpectedEOF)
				w.start(http.StatusInternalServerError)
				return
			}
			w.start(http.StatusOK)
			pw.Close()
		}()
		t.h.ServeHTTP(w, in)
	}()
	select {
	case <-w.ready:
	case <-req.Context().Done():
		pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	resp := &http.Response{
		Status: http.StatusText(w.status), StatusCode: w.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: pr, ContentLength: -1, Request: req,
	}
	if n, err := strconv.ParseInt(w.sent.Get("Content-Length"), 10, 64); err == nil && n >= 0 {
		resp.ContentLength = n
	}
	return resp, nil
}

// pipeWriter is the handler's side: headers are handed over at the first
// write (or the handler's end), the body goes through the pipe.
type pipeWriter struct {
	header http.Header
	sent   http.Header
	body   *io.PipeWriter
	status int
	once   sync.Once
	ready  chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) start(code int) {
	w.once.Do(func() {
		w.status, w.sent = code, w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) WriteHeader(code int) {
	if code >= 100 && code < 200 {
		return // informational answers are not handed over
	}
	w.start(code)
}

func (w *pipeWriter) Write(b []byte) (int, error) {
	w.start(http.StatusOK)
	return w.body.Write(b)
}

func (w *pipeWriter) Flush() { w.start(http.StatusOK) }
