package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/drydockhq/drydock/toolbox"
)

// GatewayConfig tunes a Gateway. Zero values take the defaults noted.
type GatewayConfig struct {
	// Identify returns the job a sandbox works for and the sandbox's
	// toolboxd token, against which its hello is checked. An error refuses
	// the connection. Required.
	Identify func(ctx context.Context, sandboxID string) (jobID, token string, err error)
	// IdentifyTTL is how long an answer of Identify is reused (default
	// 30s); a failed one is reused for a tenth of that, so a pod that
	// sends made-up ids cannot flood the cluster's API.
	IdentifyTTL time.Duration
	// HelloTimeout bounds the wait for a connection's hello (default 10s).
	HelloTimeout time.Duration
	// SessionIdle closes a job's session once it has had no connection for
	// this long (default 2m); the next connection opens a new one.
	SessionIdle time.Duration
}

// Gateway serves the egress of sandboxes that reach the proxy over the
// network rather than through a socket of their own (Kubernetes pods).
// Every connection starts with a hello line (toolbox.EgressHello) naming
// the sandbox and proving it holds the sandbox's token; the gateway looks
// the sandbox up, checks the proof, and hands the rest of the connection to
// the proxy's session for the sandbox's job, which judges it exactly as a
// socket's connection is judged. A gateway keeps no state a replica could
// lose: any replica answers any sandbox, so the gateway can sit behind a
// Service.
type Gateway struct {
	p   *Proxy
	cfg GatewayConfig
	log *slog.Logger

	lookups chan struct{} // bounds Identify calls in flight
	wg      sync.WaitGroup
	done    chan struct{}

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	pending   map[net.Conn]struct{} // connections still in their hello
	sessions  map[string]*gatewaySession
	ids       map[string]identity
}

type identity struct {
	job, token string
	err        error
	at         time.Time
}

// gatewaySession is the proxy session of one job, fed by the gateway.
type gatewaySession struct {
	s      io.Closer
	ln     *connListener
	active int
	since  time.Time // last time active went to 0
}

// maxIdentities bounds the cache of sandbox lookups.
const maxIdentities = 4096

// NewGateway returns a Gateway that feeds p's sessions.
func (p *Proxy) NewGateway(cfg GatewayConfig) *Gateway {
	if cfg.IdentifyTTL <= 0 {
		cfg.IdentifyTTL = 30 * time.Second
	}
	if cfg.HelloTimeout <= 0 {
		cfg.HelloTimeout = 10 * time.Second
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = 2 * time.Minute
	}
	g := &Gateway{
		p: p, cfg: cfg, log: p.log.With("gateway", true),
		lookups:   make(chan struct{}, 16),
		done:      make(chan struct{}),
		listeners: map[net.Listener]struct{}{},
		pending:   map[net.Conn]struct{}{},
		sessions:  map[string]*gatewaySession{},
		ids:       map[string]identity{},
	}
	g.wg.Add(1)
	go g.reapLoop()
	return g
}

// Serve accepts connections on ln until ln or the gateway is closed.
func (g *Gateway) Serve(ln net.Listener) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		ln.Close()
		return net.ErrClosed
	}
	g.listeners[ln] = struct{}{}
	g.wg.Add(1)
	g.mu.Unlock()
	defer g.wg.Done()
	defer func() {
		g.mu.Lock()
		delete(g.listeners, ln)
		g.mu.Unlock()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return net.ErrClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			return err
		}
		if !g.track(c) {
			c.Close()
			return net.ErrClosed
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			g.handle(c)
		}()
	}
}

func (g *Gateway) track(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.pending[c] = struct{}{}
	return true
}

func (g *Gateway) untrack(c net.Conn) {
	g.mu.Lock()
	delete(g.pending, c)
	g.mu.Unlock()
}

// handle reads a connection's hello and hands the connection on, or
// answers why not. The answer is an HTTP response because the forwarder
// passes it to the sandbox's program, which is waiting for its proxy's.
func (g *Gateway) handle(c net.Conn) {
	defer g.untrack(c)
	c.SetReadDeadline(time.Now().Add(g.cfg.HelloTimeout))
	r := bufio.NewReaderSize(c, toolbox.MaxEgressHello)
	line, err := r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			refuseConn(c, http.StatusBadRequest, "the egress hello is too long")
		} else {
			c.Close() // nothing to answer: the peer went away or said nothing
		}
		return
	}
	id, verify, err := toolbox.ParseEgressHello(string(line))
	if err != nil {
		g.log.Info("egress gateway: bad hello", "remote", c.RemoteAddr().String(), "err", err)
		refuseConn(c, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.cfg.HelloTimeout)
	defer cancel()
	who, fresh := g.identify(ctx, id, false)
	if who.err == nil && !verify(who.token) && !fresh {
		// The cached token may be older than the sandbox's (a claim).
		who, _ = g.identify(ctx, id, true)
	}
	if who.err != nil || !verify(who.token) {
		g.log.Warn("egress gateway: sandbox not recognised", "sandbox_id", id, "remote", c.RemoteAddr().String(), "err", who.err)
		// The program behind the forwarder sends its request after the
		// hello; answering before it arrives confuses HTTP clients.
		c.SetReadDeadline(time.Now().Add(time.Second))
		http.ReadRequest(bufio.NewReader(io.LimitReader(r, 64<<10)))
		refuseConn(c, http.StatusForbidden, "this sandbox is not recognised, or its proof is wrong (is its job still running?)")
		return
	}
	c.SetReadDeadline(time.Time{})
	g.handOff(who.job, c, r)
}

// identify answers from the cache unless force, else asks Identify;
// fresh says the answer was just asked for.
func (g *Gateway) identify(ctx context.Context, id string, force bool) (identity, bool) {
	g.mu.Lock()
	who, ok := g.ids[id]
	g.mu.Unlock()
	ttl := g.cfg.IdentifyTTL
	if ok && who.err != nil {
		ttl /= 10
	}
	if ok && !force && time.Since(who.at) < ttl {
		return who, false
	}
	select {
	case g.lookups <- struct{}{}:
	case <-ctx.Done():
		return identity{err: fmt.Errorf("too many sandbox lookups at once: %w", ctx.Err())}, true
	}
	job, token, err := g.cfg.Identify(ctx, id)
	<-g.lookups
	who = identity{job: job, token: token, err: err, at: time.Now()}
	g.mu.Lock()
	if len(g.ids) >= maxIdentities {
		for k, v := range g.ids {
			if time.Since(v.at) >= g.cfg.IdentifyTTL {
				delete(g.ids, k)
			}
		}
	}
	if len(g.ids) < maxIdentities {
		g.ids[id] = who
	}
	g.mu.Unlock()
	return who, true
}

// handOff gives c, whose bytes after the hello start in r, to the job's
// session, opening one when there is none.
func (g *Gateway) handOff(job string, c net.Conn, r *bufio.Reader) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		refuseConn(c, http.StatusServiceUnavailable, "the orchestrator is shutting down; try again")
		return
	}
	gs := g.sessions[job]
	if gs == nil {
		ln := newConnListener()
		gs = &gatewaySession{s: g.p.Serve(job, ln), ln: ln}
		g.sessions[job] = gs
	}
	gs.active++
	g.mu.Unlock()
	cc := &gatewayConn{Conn: c, r: r, done: func() {
		g.mu.Lock()
		if gs.active--; gs.active == 0 {
			gs.since = time.Now()
		}
		g.mu.Unlock()
	}}
	if !gs.ln.push(cc, g.done) {
		refuseConn(cc, http.StatusServiceUnavailable, "the job's egress session is closing; try again")
	}
}

// reapLoop closes sessions that have been idle for SessionIdle, so that
// a finished job's session does not outlive it for long.
func (g *Gateway) reapLoop() {
	defer g.wg.Done()
	t := time.NewTicker(g.cfg.SessionIdle / 4)
	defer t.Stop()
	for {
		select {
		case <-g.done:
			return
		case <-t.C:
		}
		var idle []*gatewaySession
		g.mu.Lock()
		for job, gs := range g.sessions {
			if gs.active == 0 && time.Since(gs.since) >= g.cfg.SessionIdle {
				delete(g.sessions, job)
				idle = append(idle, gs)
			}
		}
		for id, who := range g.ids {
			if time.Since(who.at) >= g.cfg.IdentifyTTL {
				delete(g.ids, id)
			}
		}
		g.mu.Unlock()
		for _, gs := range idle {
			gs.s.Close()
		}
	}
}

// Close stops every listener given to Serve, closes every connection and
// session, and waits for the gateway's goroutines.
func (g *Gateway) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	close(g.done)
	for ln := range g.listeners {
		ln.Close()
	}
	for c := range g.pending {
		c.Close()
	}
	sessions := g.sessions
	g.sessions = map[string]*gatewaySession{}
	g.mu.Unlock()
	for _, gs := range sessions {
		gs.s.Close()
	}
	g.wg.Wait()
	return nil
}

// refuseConn writes a complete HTTP error answer and closes c.
func refuseConn(c net.Conn, status int, msg string) {
	c.SetWriteDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nX-Drydock-Egress: denied\r\n\r\ndrydock egress gateway: %s\n",
		status, http.StatusText(status), msg)
	c.Close()
}

// gatewayConn is a connection handed to a session: it reads what the
// hello's reader already buffered first, and reports its first Close, for
// the session's idle count.
type gatewayConn struct {
	net.Conn
	r    *bufio.Reader
	done func()
	once sync.Once
}

func (c *gatewayConn) Read(b []byte) (int, error) { return c.r.Read(b) }

func (c *gatewayConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.done)
	return err
}

// CloseWrite passes a half-close on to the forwarder.
func (c *gatewayConn) CloseWrite() error { return closeWrite(c.Conn) }

// connListener is a net.Listener fed by the gateway rather than by a
// socket, so that a session serves the gateway's connections as it
// serves a socket's.
type connListener struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newConnListener() *connListener {
	return &connListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return gatewayAddr{} }

// push hands c to Accept; false when the listener or the gateway closed.
func (l *connListener) push(c net.Conn, stop <-chan struct{}) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	case <-stop:
		return false
	}
}

type gatewayAddr struct{}

func (gatewayAddr) Network() string { return "egress-gateway" }
func (gatewayAddr) String() string  { return "egress-gateway" }
