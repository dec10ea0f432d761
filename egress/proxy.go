package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/unixsock"
)

// Config tunes a Proxy. Zero values take the defaults noted.
type Config struct {
	// Rules returns a job's current allowlist. An error refuses the
	// connection (fail closed).
	Rules func(ctx context.Context, jobID string) ([]drydock.EgressRule, error)
	// RulesTTL is how long an answer of Rules is reused (default 2s).
	// Changed drops it at once.
	RulesTTL time.Duration
	// OnDeny, when set, hears of every refused connection. It must not
	// block for long.
	OnDeny func(jobID string, d Denial)
	// Private lists the non-public addresses rules may lead to; every other
	// non-public address is refused whatever the rules say.
	Private []netip.Prefix
	// Ceiling, when set, must admit a destination too, whatever a job's
	// list says (the operator's --egress-allow): it binds lists stored
	// before it was set or by a replica that was told otherwise.
	Ceiling func(host string, port int) bool
	// LookupIP resolves a host name (default: the host's resolver).
	LookupIP func(ctx context.Context, host string) ([]netip.Addr, error)
	// DialTimeout bounds resolving and connecting (default 10s).
	DialTimeout time.Duration
	// IdleTimeout closes a connection that carried nothing either way for
	// this long (default 10m).
	IdleTimeout time.Duration
	// MaxConns bounds the connections one sandbox has open at once
	// (default 128); more are answered 503.
	MaxConns int
	// RecheckInterval is how often open connections are judged again, so
	// that a change made through another replica also closes them
	// (default 5s).
	RecheckInterval time.Duration
	// Logger receives refusals and failures; nil discards.
	Logger *slog.Logger
}

// Denial is one refused connection.
type Denial struct {
	Host   string // as the sandbox asked for it
	Port   int
	Status int    // the HTTP status answered
	Reason string // why, for people; never holds secrets
}

// Dest is the destination in host:port form.
func (d Denial) Dest() string { return net.JoinHostPort(d.Host, strconv.Itoa(d.Port)) }

// Proxy serves the egress of many sandboxes, one listener each.
type Proxy struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	sessions map[string]map[*session]struct{} // by job id
	cache    map[string]cachedRules
}

type cachedRules struct {
	rules []drydock.EgressRule
	at    time.Time
}

// New returns a Proxy; it serves nothing until Listen or Serve.
func New(cfg Config) *Proxy {
	if cfg.RulesTTL <= 0 {
		cfg.RulesTTL = 2 * time.Second
	}
	if cfg.LookupIP == nil {
		cfg.LookupIP = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 10 * time.Minute
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 128
	}
	if cfg.RecheckInterval <= 0 {
		cfg.RecheckInterval = 5 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Proxy{
		cfg: cfg, log: log.With("component", "egress"),
		sessions: map[string]map[*session]struct{}{},
		cache:    map[string]cachedRules{},
	}
}

// Listen opens a unix socket at path (replacing a stale socket left there
// by a previous process) and serves the job's egress on it until the
// returned Closer is closed. The socket is mode 0666: the sandbox's user is
// another uid on the host, and the directory holding it is what keeps other
// host users out. That directory may be the sandbox's to write, so nothing
// at path is followed (package unixsock): a link planted there, even
// between bind and chmod, leaves its target as it was and fails Listen.
func (p *Proxy) Listen(jobID, path string) (io.Closer, error) {
	ln, err := unixsock.Listen(path, 0o666)
	if err != nil {
		return nil, fmt.Errorf("egress socket: %w", err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress socket: %w", err)
	}
	s := p.Serve(jobID, ln)
	return closerFunc(func() error {
		err := s.Close()
		// Closing must not remove a socket that a newer listener (another
		// process reattaching to the sandbox) put at the same path.
		unixsock.Remove(path, fi)
		return err
	}), nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// Serve serves the job's egress on ln until the returned Closer is closed,
// which also closes every connection the session opened and waits for its
// goroutines.
func (p *Proxy) Serve(jobID string, ln net.Listener) io.Closer {
	s := &session{p: p, job: jobID, conns: map[*tracked]struct{}{}, done: make(chan struct{})}
	s.slots = make(chan struct{}, p.cfg.MaxConns)
	s.transport = &http.Transport{
		Proxy:                 nil, // never chain to the host's own proxy
		DialContext:           s.dialChecked,
		DisableKeepAlives:     true, // every request is judged and dialed anew
		ResponseHeaderTimeout: 5 * time.Minute,
		TLSHandshakeTimeout:   p.cfg.DialTimeout,
	}
	s.hs = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       p.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
	p.mu.Lock()
	if p.sessions[jobID] == nil {
		p.sessions[jobID] = map[*session]struct{}{}
	}
	p.sessions[jobID][s] = struct{}{}
	p.mu.Unlock()
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		_ = s.hs.Serve(&limitListener{Listener: ln, s: s})
	}()
	go func() {
		defer s.wg.Done()
		s.recheckLoop()
	}()
	return s
}

// Changed drops the cached allowlist of a job and judges its open
// connections again at once. Call it after the job's list changed.
func (p *Proxy) Changed(jobID string) {
	p.mu.Lock()
	delete(p.cache, jobID)
	var ss []*session
	for s := range p.sessions[jobID] {
		ss = append(ss, s)
	}
	p.mu.Unlock()
	for _, s := range ss {
		s.recheck()
	}
}

// rules returns the job's allowlist, cached for RulesTTL.
func (p *Proxy) rules(ctx context.Context, jobID string) ([]drydock.EgressRule, error) {
	p.mu.Lock()
	c, ok := p.cache[jobID]
	p.mu.Unlock()
	if ok && time.Since(c.at) < p.cfg.RulesTTL {
		return c.rules, nil
	}
	if p.cfg.Rules == nil {
		return nil, nil
	}
	rules, err := p.cfg.Rules(ctx, jobID)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if _, live := p.sessions[jobID]; live {
		p.cache[jobID] = cachedRules{rules: rules, at: time.Now()}
	}
	p.mu.Unlock()
	return rules, nil
}

// check judges host:port for a job and returns the addresses that may be
// dialed, or why not.
func (p *Proxy) check(ctx context.Context, jobID, host string, port int) ([]netip.Addr, *Denial) {
	deny := func(status int, format string, args ...any) *Denial {
		return &Denial{Host: host, Port: port, Status: status, Reason: fmt.Sprintf(format, args...)}
	}
	rules, err := p.rules(ctx, jobID)
	if err != nil {
		p.log.Warn("read egress allowlist", "job_id", jobID, "err", err)
		return nil, deny(http.StatusServiceUnavailable, "the job's egress allowlist could not be read; try again")
	}
	if !drydock.EgressAllows(rules, host, port) {
		return nil, deny(http.StatusForbidden, reasonNotListed)
	}
	if !p.ceilingAllows(host, port) {
		return nil, deny(http.StatusForbidden, "outside what the operator allows any job to reach (--egress-allow)")
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		addrs = []netip.Addr{a.Unmap()}
	} else {
		rctx, cancel := context.WithTimeout(ctx, p.cfg.DialTimeout)
		addrs, err = p.cfg.LookupIP(rctx, host)
		cancel()
		if err != nil || len(addrs) == 0 {
			return nil, deny(http.StatusBadGateway, "the name does not resolve on the host")
		}
	}
	var ok []netip.Addr
	var refused netip.Addr
	for _, a := range addrs {
		a = a.Unmap()
		if Public(a) || p.privateAllowed(a) {
			ok = append(ok, a)
		} else if !refused.IsValid() {
			refused = a
		}
	}
	if len(ok) == 0 {
		if refused.String() == strings.Trim(host, "[]") {
			return nil, deny(http.StatusForbidden, "%s is not a public address, and the operator has not opened it to sandboxes", refused)
		}
		return nil, deny(http.StatusForbidden, "the name resolves to %s, which is not a public address, and the operator has not opened it to sandboxes", refused)
	}
	return ok, nil
}

func (p *Proxy) ceilingAllows(host string, port int) bool {
	return p.cfg.Ceiling == nil || p.cfg.Ceiling(host, port)
}

func (p *Proxy) privateAllowed(a netip.Addr) bool {
	for _, pr := range p.cfg.Private {
		if pr.Contains(a) {
			return true
		}
	}
	return false
}

func (p *Proxy) denied(jobID string, d *Denial) {
	p.log.Info("egress refused", "job_id", jobID, "dest", d.Dest(), "reason", d.Reason)
	if p.cfg.OnDeny != nil {
		p.cfg.OnDeny(jobID, *d)
	}
}

// session is one sandbox's listener and what it opened.
type session struct {
	p         *Proxy
	job       string
	hs        *http.Server
	transport *http.Transport
	slots     chan struct{}
	wg        sync.WaitGroup // the accept and recheck loops
	handlers  sync.WaitGroup // requests in flight; added to under mu
	done      chan struct{}
	closeOnce sync.Once

	mu     sync.Mutex
	conns  map[*tracked]struct{}
	closed bool
}

// tracked is a connection to a destination, closed when its destination
// stops being allowed or the session ends. peer is the sandbox's side of a
// CONNECT tunnel (nil for plain HTTP, where closing the upstream ends the
// request).
type tracked struct {
	net.Conn
	host string
	port int
	peer net.Conn
	once sync.Once
}

func (t *tracked) Close() error {
	var err error
	t.once.Do(func() {
		err = t.Conn.Close()
		if t.peer != nil {
			t.peer.Close()
		}
	})
	return err
}

func (s *session) track(t *tracked) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[t] = struct{}{}
	return true
}

// enter counts a request in flight, unless the session is closing.
func (s *session) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.handlers.Add(1)
	return true
}

func (s *session) untrack(t *tracked) {
	s.mu.Lock()
	delete(s.conns, t)
	s.mu.Unlock()
}

// Close stops the listener, closes every connection and waits for the
// session's goroutines.
func (s *session) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.done)
		s.mu.Lock()
		s.closed = true
		conns := make([]*tracked, 0, len(s.conns))
		for t := range s.conns {
			conns = append(conns, t)
		}
		s.mu.Unlock()
		err = s.hs.Close()
		for _, t := range conns {
			t.Close()
		}
		s.transport.CloseIdleConnections()
		s.wg.Wait()
		s.handlers.Wait()
		p := s.p
		p.mu.Lock()
		delete(p.sessions[s.job], s)
		if len(p.sessions[s.job]) == 0 {
			delete(p.sessions, s.job)
			delete(p.cache, s.job)
		}
		p.mu.Unlock()
	})
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (s *session) recheckLoop() {
	t := time.NewTicker(s.p.cfg.RecheckInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.recheck()
		}
	}
}

// recheck closes the open connections whose destination the current
// allowlist no longer admits. A failure to read the list keeps them: the
// store may be briefly unreachable, and new connections fail closed anyway.
func (s *session) recheck() {
	ctx, cancel := context.WithTimeout(context.Background(), s.p.cfg.DialTimeout)
	defer cancel()
	rules, err := s.p.rules(ctx, s.job)
	if err != nil {
		s.p.log.Warn("recheck egress allowlist", "job_id", s.job, "err", err)
		return
	}
	s.mu.Lock()
	var drop []*tracked
	for t := range s.conns {
		if !drydock.EgressAllows(rules, t.host, t.port) {
			drop = append(drop, t)
		}
	}
	s.mu.Unlock()
	for _, t := range drop {
		s.p.log.Info("egress connection closed: destination no longer allowed", "job_id", s.job, "dest", net.JoinHostPort(t.host, strconv.Itoa(t.port)))
		t.Close()
	}
}

// ServeHTTP answers one proxy request: CONNECT or an absolute http:// URL.
func (s *session) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		http.Error(w, "drydock egress proxy: closing", http.StatusServiceUnavailable)
		return
	}
	defer s.handlers.Done()
	switch {
	case r.Method == http.MethodConnect:
		s.connect(w, r)
	case r.URL.IsAbs() && r.URL.Scheme == "http" && r.URL.Host != "":
		s.forward(w, r)
	default:
		http.Error(w, "drydock egress proxy: send CONNECT host:port, or an absolute http:// URL", http.StatusBadRequest)
	}
}

// target splits the requested destination; plain HTTP defaults to port 80.
func target(hostport string, defaultPort int) (string, int, error) {
	host, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		if defaultPort == 0 {
			return "", 0, fmt.Errorf("CONNECT needs host:port, not %q", hostport)
		}
		host, ps = hostport, strconv.Itoa(defaultPort)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 || host == "" {
		return "", 0, fmt.Errorf("bad destination %q", hostport)
	}
	return strings.ToLower(strings.TrimSuffix(host, ".")), port, nil
}

const reasonNotListed = "not in the job's egress allowlist"

// refuse answers a denial with a body that says what to do about it.
func (s *session) refuse(w http.ResponseWriter, d *Denial) {
	defer s.p.denied(s.job, d) // after the answer: reporting may write to the store
	msg := fmt.Sprintf("drydock egress proxy: connection to %s refused: %s.\n", d.Dest(), d.Reason)
	if d.Reason == reasonNotListed {
		// Only the job's list is the job owner's to change.
		msg += fmt.Sprintf("To allow it, add %q to the job's egress list: PUT /v1/jobs/%s/egress {\"egress\": [...]} or `drydock egress %s --allow %s`.\n",
			d.Dest(), s.job, s.job, d.Dest())
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Drydock-Egress", "denied")
	w.Header().Set("Connection", "close")
	w.WriteHeader(d.Status)
	io.WriteString(w, msg)
}

func (s *session) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := target(r.Host, 0)
	if err != nil {
		http.Error(w, "drydock egress proxy: "+err.Error(), http.StatusBadRequest)
		return
	}
	addrs, d := s.p.check(r.Context(), s.job, host, port)
	if d != nil {
		s.refuse(w, d)
		return
	}
	up, err := s.dial(r.Context(), addrs, port)
	if err != nil {
		s.refuse(w, &Denial{Host: host, Port: port, Status: http.StatusBadGateway, Reason: "the destination did not accept a connection"})
		return
	}
	rc := http.NewResponseController(w)
	client, buf, err := rc.Hijack()
	if err != nil {
		up.Close()
		return
	}
	t := &tracked{Conn: up, host: host, port: port, peer: client}
	if !s.track(t) {
		t.Close()
		return
	}
	defer s.untrack(t)
	defer t.Close()
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		return
	}
	// Bytes the client sent right behind the CONNECT request (a TLS
	// ClientHello) are already in buf's reader.
	if n := buf.Reader.Buffered(); n > 0 {
		pending, _ := buf.Reader.Peek(n)
		if _, err := up.Write(pending); err != nil {
			return
		}
	}
	s.pipe(client, up)
}

// pipe copies both ways until both sides have ended, or either fails, or
// nothing moves for IdleTimeout; then it closes both. A side that ends
// cleanly is passed on as a half-close, so request-then-read protocols work.
func (s *session) pipe(a, b net.Conn) {
	idle := s.p.cfg.IdleTimeout
	var mu sync.Mutex
	lastActive := time.Now()
	quiet := func() time.Duration { mu.Lock(); defer mu.Unlock(); return time.Since(lastActive) }
	copyHalf := func(dst, src net.Conn, done chan<- bool) {
		buf := make([]byte, 64<<10)
		var deadlineSet time.Time
		for {
			// Moving the deadline on every read costs more than the
			// copy; a second of slack on a minutes-long timeout does not.
			if now := time.Now(); now.Sub(deadlineSet) > min(time.Second, idle/2) {
				src.SetReadDeadline(now.Add(idle))
				deadlineSet = now
			}
			n, err := src.Read(buf)
			if n > 0 {
				mu.Lock()
				lastActive = time.Now()
				mu.Unlock()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					done <- false
					return
				}
			}
			if err == nil {
				continue
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() && quiet() < idle {
				continue // the other direction is busy
			}
			if cw, ok := dst.(interface{ CloseWrite() error }); ok && err == io.EOF && cw.CloseWrite() == nil {
				done <- true
				return
			}
			done <- false
			return
		}
	}
	done := make(chan bool, 2)
	go copyHalf(b, a, done)
	go copyHalf(a, b, done)
	if clean := <-done; clean {
		<-done
	} else {
		a.Close()
		b.Close()
		<-done
	}
	a.Close()
	b.Close()
}

func (s *session) forward(w http.ResponseWriter, r *http.Request) {
	host, port, err := target(r.URL.Host, 80)
	if err != nil {
		http.Error(w, "drydock egress proxy: "+err.Error(), http.StatusBadRequest)
		return
	}
	addrs, d := s.p.check(r.Context(), s.job, host, port)
	if d != nil {
		s.refuse(w, d)
		return
	}
	ctx := context.WithValue(r.Context(), checkedKey{}, checked{host: host, port: port, addrs: addrs})
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = pr.In.URL
			pr.Out.Host = pr.In.Host
		},
		Transport: s.transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, errNotChecked) {
				http.Error(w, "drydock egress proxy: internal error", http.StatusInternalServerError)
				return
			}
			s.p.log.Debug("egress forward failed", "job_id", s.job, "dest", net.JoinHostPort(host, strconv.Itoa(port)), "err", err)
			s.refuse(w, &Denial{Host: host, Port: port, Status: http.StatusBadGateway, Reason: "the destination did not answer"})
		},
		ErrorLog: slog.NewLogLogger(s.p.log.Handler(), slog.LevelDebug),
	}
	rp.ServeHTTP(w, r.WithContext(ctx))
}

type checkedKey struct{}

// checked carries a judged destination from the handler to the dialer, so
// that plain HTTP dials exactly the addresses that were checked.
type checked struct {
	host  string
	port  int
	addrs []netip.Addr
}

var errNotChecked = errors.New("egress: dial without a check")

func (s *session) dialChecked(ctx context.Context, _, _ string) (net.Conn, error) {
	c, ok := ctx.Value(checkedKey{}).(checked)
	if !ok {
		return nil, errNotChecked
	}
	up, err := s.dial(ctx, c.addrs, c.port)
	if err != nil {
		return nil, err
	}
	t := &tracked{Conn: up, host: c.host, port: c.port}
	if !s.track(t) {
		up.Close()
		return nil, net.ErrClosed
	}
	return &untrackOnClose{tracked: t, s: s}, nil
}

type untrackOnClose struct {
	*tracked
	s *session
}

func (u *untrackOnClose) Close() error {
	u.s.untrack(u.tracked)
	return u.tracked.Close()
}

// dial connects to the first of addrs that answers.
func (s *session) dial(ctx context.Context, addrs []netip.Addr, port int) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, s.p.cfg.DialTimeout)
	defer cancel()
	var d net.Dialer
	var err error
	for _, a := range addrs {
		var c net.Conn
		c, err = d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
	}
	return nil, err
}

// limitListener answers connections beyond MaxConns with 503 at once
// instead of leaving them queued.
type limitListener struct {
	net.Listener
	s *session
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.s.slots <- struct{}{}:
			return &slotConn{Conn: c, slots: l.s.slots}, nil
		default:
			l.s.p.log.Warn("egress connection limit reached", "job_id", l.s.job, "max", l.s.p.cfg.MaxConns)
			c.SetWriteDeadline(time.Now().Add(time.Second))
			io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: text/plain\r\n\r\n"+
				"drydock egress proxy: too many connections open from this sandbox\n")
			c.Close()
		}
	}
}

type slotConn struct {
	net.Conn
	slots chan struct{}
	once  sync.Once
}

// CloseWrite passes a half-close on to the sandbox's side of a tunnel.
func (c *slotConn) CloseWrite() error { return closeWrite(c.Conn) }

// closeWrite half-closes c when its kind of connection can.
func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

func (c *slotConn) Close() error {
	c.once.Do(func() { <-c.slots })
	return c.Conn.Close()
}

// Public reports whether a is a globally routable unicast address: not
// loopback, private, link-local, shared (100.64/10), unspecified,
// multicast, documentation, benchmarking or reserved, nor an IPv6 form
// that embeds an IPv4 address (NAT64, 6to4, Teredo).
func Public(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

var nonPublic = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4",
		"64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/32", "2001:db8::/32", "2002::/16",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()
