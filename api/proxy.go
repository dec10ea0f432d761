package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/rfb"
	"github.com/drydockhq/drydock/toolbox"
)

// handleDesktopProxy bridges a browser's noVNC WebSocket to the sandbox's
// VNC server through toolboxd's VNC WebSocket. The bridge performs the VNC
// authentication itself with the sandbox's password, so the password never
// reaches the browser, which is offered no authentication at all. A
// view-only viewer's input messages are dropped here, whatever the page
// sends.
func (s *Server) handleDesktopProxy(w http.ResponseWriter, r *http.Request, a *liveAccess) {
	log := s.logLive("desktop", a)
	if a.job.Profile != drydock.ProfileDesktop {
		s.writeError(w, r, drydock.Errorf(drydock.ECONFLICT, "job %s runs the %s profile, which has no desktop", a.job.ID, a.job.Profile))
		return
	}
	sb, err := s.sandboxOf(r.Context(), a.job)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	release, err := s.streams.acquire(a.who.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer release()
	tb := s.toolboxFor(sb)
	// Dial first, so that a desktop that is not up yet is an HTTP error the
	// page can show rather than a WebSocket that closes at once.
	dialCtx, cancelDial := context.WithTimeout(r.Context(), 10*time.Second)
	backend, resp, err := websocket.Dial(dialCtx, tb.BaseURL()+"/v1/desktop/vnc", &websocket.DialOptions{
		HTTPClient:      &http.Client{Transport: tb.Transport()},
		HTTPHeader:      http.Header{"Authorization": {"Bearer " + sb.Token}},
		Subprotocols:    []string{"binary"},
		CompressionMode: websocket.CompressionDisabled,
	})
	cancelDial()
	if err != nil {
		s.writeError(w, r, vncDialError(resp, err))
		return
	}
	backend.SetReadLimit(-1)
	// Control is a lease in the store (control.go): taking it pauses the
	// agent. It is taken once the desktop answered (a desktop still
	// starting pauses nothing) and before the upgrade, so that a second
	// person is refused with a 409 that names the holder.
	var lease *controlLease
	if a.control {
		if lease, err = s.takeControl(r.Context(), a, log); err != nil {
			backend.CloseNow()
			s.writeError(w, r, err)
			return
		}
		defer lease.release()
	}
	client, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols:   []string{"binary"},
		OriginPatterns: s.originPatterns(),
		// RFB updates are already encoded, often compressed, by the VNC
		// server; deflating them again costs CPU and latency.
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		backend.CloseNow()
		return // Accept has answered
	}
	client.SetReadLimit(-1)
	gauge := s.live.conns.WithLabelValues("desktop")
	gauge.Inc()
	defer gauge.Dec()
	log.Info("desktop viewer connected")

	// The hijacked request's context is not a lifetime to rely on; the
	// bridge lives until either side leaves, the job ends, the server
	// shuts down or the viewer's token (or the link's) is revoked.
	lifeCtx, stop := s.liveLifetime(context.Background(), a)
	defer stop()
	jobCtx, end := context.WithCancelCause(lifeCtx)
	defer end(nil)
	var input func() bool // nil: view-only
	if lease != nil {
		go lease.keep(jobCtx, end)
		input = lease.held
	}
	err = bridgeRFB(jobCtx, client, backend, sb.VNCPassword, input)
	if err != nil && !isClosedErr(err) {
		log.Warn("desktop bridge failed", "err", err)
	}
	code, reason := closeReason(context.Cause(jobCtx), err)
	_ = client.Close(code, reason)
	_ = backend.Close(websocket.StatusNormalClosure, "")
	log.Info("desktop viewer disconnected", "reason", reason)
}

// closeReason is the WebSocket close status and reason a viewer gets.
func closeReason(cause, err error) (websocket.StatusCode, string) {
	var (
		re    *rfb.Error
		ended errControlEnded
	)
	switch {
	case errors.As(cause, &ended):
		// A close reason holds at most 123 bytes.
		msg := ended.Error()
		if len(msg) > 120 {
			msg = strings.ToValidUTF8(msg[:120], "")
		}
		return websocket.StatusNormalClosure, msg
	case errors.Is(cause, errJobEnded):
		return websocket.StatusNormalClosure, "the job has ended"
	case errors.Is(cause, errShutdown):
		return websocket.StatusGoingAway, "the server is shutting down"
	case errors.Is(cause, errRevoked):
		return websocket.StatusPolicyViolation, "access was revoked: the token that opened this view is no longer valid"
	case err == nil || isClosedErr(err):
		return websocket.StatusNormalClosure, ""
	case errors.As(err, &re):
		return websocket.StatusInternalError, re.Error()
	}
	return websocket.StatusInternalError, "desktop connection failed"
}

func vncDialError(resp *http.Response, err error) error {
	if resp != nil {
		switch resp.StatusCode {
		case http.StatusNotImplemented:
			return drydock.Errorf(drydock.ENOTIMPLEMENTED, "the job's sandbox has no desktop")
		case http.StatusServiceUnavailable, http.StatusBadGateway:
			return drydock.Errorf(drydock.EUNAVAILABLE, "the job's desktop is not ready yet; try again in a moment")
		}
	}
	return fmt.Errorf("%w: %w", drydock.Errorf(drydock.EUNAVAILABLE, "cannot reach the job's desktop"), err)
}

// originPatterns admits WebSockets from the UI's own origin when live views
// are served from another one. The request's own host is always admitted.
func (s *Server) originPatterns() []string {
	if s.cfg.PublicURL == "" {
		return nil
	}
	u, err := url.Parse(s.cfg.PublicURL)
	if err != nil || u.Host == "" {
		return nil
	}
	return []string{u.Host}
}

func isClosedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, context.Canceled) ||
		websocket.CloseStatus(err) == websocket.StatusNormalClosure || websocket.CloseStatus(err) == websocket.StatusGoingAway
}

// bridgeRFB runs the RFB handshake against both sides, then copies bytes
// both ways as they come until one side leaves or ctx ends. Server-to-client
// bytes are never parsed or held back. The viewer's input reaches the
// desktop only while input() says so (nil: never, a view-only viewer).
func bridgeRFB(ctx context.Context, client, backend *websocket.Conn, password string, input func() bool) error {
	bctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cc := websocket.NetConn(bctx, client, websocket.MessageBinary)
	bc := websocket.NetConn(bctx, backend, websocket.MessageBinary)
	done := make(chan struct{})
	defer close(done)
	go func() {
		// Close with the reason here rather than cancel the connections'
		// context, which would drop them without a close frame.
		select {
		case <-ctx.Done():
			code, reason := closeReason(context.Cause(ctx), nil)
			_ = client.Close(code, reason)
			_ = backend.Close(websocket.StatusNormalClosure, "")
		case <-done:
		}
	}()
	deadline := time.Now().Add(rfb.HandshakeTimeout)
	_ = cc.SetDeadline(deadline)
	_ = bc.SetDeadline(deadline)
	cr := bufio.NewReaderSize(cc, 4096)
	br := bufio.NewReaderSize(bc, 64<<10)
	if err := rfb.Handshake(cr, cc, br, bc, password); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	_ = cc.SetDeadline(time.Time{})
	_ = bc.SetDeadline(time.Time{})

	errc := make(chan error, 2)
	go func() {
		// Bytes the handshake read ahead go first, then every read of the
		// backend is written to the viewer at once.
		if n := br.Buffered(); n > 0 {
			b, _ := br.Peek(n)
			if _, err := cc.Write(b); err != nil {
				errc <- err
				return
			}
			_, _ = br.Discard(n)
		}
		_, err := io.CopyBuffer(cc, bc, make([]byte, 64<<10))
		errc <- err
	}()
	go func() {
		errc <- rfb.FilterInput(bc, cr, input)
	}()
	err := <-errc
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// jupyterStart is the state of starting a sandbox's Jupyter server.
type jupyterStart struct {
	done    chan struct{}
	err     error
	endedAt time.Time
}

// ensureJupyter starts the sandbox's Jupyter server once, in the background,
// serving under base (the path the orchestrator proxies). A failed start is
// tried again by a later request.
func (s *Server) ensureJupyter(sb *drydock.Sandbox, base string) *jupyterStart {
	tb := s.toolboxFor(sb)
	s.live.mu.Lock()
	defer s.live.mu.Unlock()
	if st, ok := s.live.jupyter[sb.ID]; ok {
		select {
		case <-st.done:
			if st.err == nil || time.Since(st.endedAt) < 5*time.Second {
				return st
			}
		default:
			return st
		}
	}
	if len(s.live.jupyter) >= 1024 {
		for id, st := range s.live.jupyter {
			select {
			case <-st.done:
				delete(s.live.jupyter, id)
			default:
			}
		}
	}
	st := &jupyterStart{done: make(chan struct{})}
	s.live.jupyter[sb.ID] = st
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		st.err = startJupyter(ctx, tb, sb.Token, base)
		if st.err != nil {
			s.log.Warn("start jupyter", "sandbox", sb.ID, "err", st.err)
		}
		st.endedAt = time.Now()
		close(st.done)
	}()
	return st
}

// jupyterStartRequest is the body of toolboxd's POST /v1/jupyter/start.
type jupyterStartRequest struct {
	BaseURL string `json:"base_url"`
}

// startJupyter asks toolboxd to start Jupyter. A job's link is handed out
// as soon as its sandbox exists, which can be before toolboxd listens, so a
// request that reaches no daemon is tried again until ctx ends.
func startJupyter(ctx context.Context, tb *toolbox.Client, token, base string) error {
	body, _ := json.Marshal(jupyterStartRequest{BaseURL: base})
	hc := &http.Client{Transport: tb.Transport()}
	var resp *http.Response
	for wait := 20 * time.Millisecond; ; wait = min(wait*2, time.Second) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, tb.BaseURL()+"/v1/jupyter/start", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err = hc.Do(req)
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", drydock.Errorf(drydock.EUNAVAILABLE, "the job's sandbox does not answer"), err)
		case <-time.After(wait):
		}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 300 {
		return nil
	}
	var eb drydock.ErrorBody
	_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&eb)
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusNotImplemented:
		return drydock.Errorf(drydock.ENOTIMPLEMENTED, "this sandbox cannot start Jupyter")
	case eb.Error.Message != "" && resp.StatusCode < 500:
		return drydock.Errorf(drydock.ECONFLICT, "Jupyter did not start: %s", eb.Error.Message)
	}
	return drydock.Errorf(drydock.EUNAVAILABLE, "Jupyter did not start (the sandbox answered %s)", resp.Status)
}

// handleJupyter proxies the sandbox's Jupyter server, HTTP and WebSockets,
// under /jobs/{id}/jupyter/, starting it on first use.
func (s *Server) handleJupyter(w http.ResponseWriter, r *http.Request, a *liveAccess) {
	// Encoded dots ("..%2f") pass the mux's cleaning; the sandbox would
	// get a path that resolves above the job's Jupyter base.
	for seg := range strings.SplitSeq(r.URL.Path, "/") {
		if seg == ".." {
			s.liveError(w, r, drydock.Errorf(drydock.EINVALID, "the path must not contain '..' segments"))
			return
		}
	}
	sb, err := s.sandboxOf(r.Context(), a.job)
	if err != nil {
		s.liveError(w, r, err)
		return
	}
	base := "/jobs/" + a.job.ID + "/jupyter/"
	st := s.ensureJupyter(sb, base)
	select {
	case <-st.done:
	default:
		if wantsPage(r) {
			// Jupyter takes tens of seconds to start; a page that reloads
			// itself beats a browser tab that seems to hang.
			h := w.Header()
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
			h.Set("Cache-Control", "no-store")
			h.Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `<!doctype html><html lang="en"><meta charset="utf-8"><meta http-equiv="refresh" content="2">`+
				`<title>Starting Jupyter</title><body style="font:16px system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em">`+
				`<h1>Starting Jupyter…</h1><p role="status">The sandbox is starting its Jupyter server; this page reloads by itself.</p></body></html>`)
			return
		}
		select {
		case <-st.done:
		case <-r.Context().Done():
			return
		}
	}
	if st.err != nil {
		s.liveError(w, r, st.err)
		return
	}
	if r.Header.Get("Upgrade") != "" {
		release, err := s.streams.acquire(a.who.ID)
		if err != nil {
			s.liveError(w, r, err)
			return
		}
		defer release()
		// The proxy closes an upgraded connection when the request's
		// context ends: tie it to the job's life and to its principal's.
		ctx, stop := s.liveLifetime(r.Context(), a)
		defer stop()
		r = r.WithContext(ctx)
		gauge := s.live.conns.WithLabelValues("jupyter")
		gauge.Inc()
		defer gauge.Dec()
	} else {
		// A long request (a download, a long poll) ends with its
		// principal too.
		ctx, stop := s.revoked.whileValid(r.Context(), a.who)
		defer stop()
		r = r.WithContext(ctx)
	}
	s.jupyterProxy(s.toolboxFor(sb), sb.Token, sb.ID).ServeHTTP(w, r)
}

// forgetJupyter drops a finished start record of a sandbox's Jupyter.
func (s *Server) forgetJupyter(sandboxID string) {
	s.live.mu.Lock()
	defer s.live.mu.Unlock()
	if st, ok := s.live.jupyter[sandboxID]; ok {
		select {
		case <-st.done:
			delete(s.live.jupyter, sandboxID)
		default:
		}
	}
}

func wantsPage(r *http.Request) bool {
	return r.Method == http.MethodGet && r.Header.Get("Upgrade") == "" && strings.Contains(r.Header.Get("Accept"), "text/html")
}

// jupyterProxy forwards to toolboxd's /v1/jupyter/proxy/<path>, where path
// is the request's own path (Jupyter serves under that base URL). The
// viewer's credentials stay here: the sandbox gets its own token instead.
func (s *Server) jupyterProxy(tb *toolbox.Client, token, sandboxID string) http.Handler {
	target, _ := url.Parse(tb.BaseURL())
	return &httputil.ReverseProxy{
		Transport:     tb.Transport(),
		FlushInterval: -1,
		Rewrite: func(pr *httputil.ProxyRequest) {
			out := pr.Out
			out.URL.Scheme, out.URL.Host = target.Scheme, target.Host
			out.URL.Path = "/v1/jupyter/proxy" + pr.In.URL.Path
			out.URL.RawPath = ""
			if ep := pr.In.URL.EscapedPath(); ep != pr.In.URL.Path {
				out.URL.RawPath = "/v1/jupyter/proxy" + ep
			}
			if q := pr.In.URL.Query(); q.Has(linkParam) {
				q.Del(linkParam)
				out.URL.RawQuery = q.Encode()
			}
			// Jupyter checks a WebSocket's Origin against Host.
			out.Host = pr.In.Host
			out.Header.Set("Authorization", "Bearer "+token)
			out.Header.Del("Cookie")
			for _, c := range pr.In.Cookies() {
				if !strings.HasPrefix(c.Name, "drydock_") {
					out.Header.Add("Cookie", c.String())
				}
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			// toolboxd answers 503 when its Jupyter server is not running
			// (e.g. after a restart of the sandbox): forget the remembered
			// start so that the next request starts it again.
			if resp.StatusCode == http.StatusServiceUnavailable {
				s.forgetJupyter(sandboxID)
			}
			// The sandbox may not set or clear the orchestrator's cookies.
			cookies := resp.Header.Values("Set-Cookie")
			resp.Header.Del("Set-Cookie")
			for _, c := range cookies {
				if ck, err := http.ParseSetCookie(c); err == nil && !strings.HasPrefix(ck.Name, "drydock_") {
					resp.Header.Add("Set-Cookie", c)
				}
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return
			}
			s.log.Warn("jupyter proxy", "path", r.URL.Path, "err", err)
			s.liveError(w, r, drydock.Errorf(drydock.EUNAVAILABLE, "the job's Jupyter server does not answer"))
		},
	}
}
