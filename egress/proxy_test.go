package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// rulesFor is a mutable allowlist standing in for the store.
type rulesFor struct {
	mu    sync.Mutex
	list  []string
	err   error
	reads int
}

func (r *rulesFor) set(list ...string) {
	r.mu.Lock()
	r.list = list
	r.mu.Unlock()
}

func (r *rulesFor) Rules(ctx context.Context, jobID string) ([]drydock.EgressRule, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	if r.err != nil {
		return nil, r.err
	}
	return drydock.ParseEgress(r.list)
}

type fixture struct {
	proxy  *Proxy
	rules  *rulesFor
	url    *url.URL // the proxy's address for clients
	denied chan Denial
	closer io.Closer
}

// setup serves one job's egress on a TCP port of this host. loopback is
// opened to sandboxes unless private is given.
func setup(t testing.TB, cfg Config, allow ...string) *fixture {
	t.Helper()
	f := &fixture{rules: &rulesFor{list: allow}, denied: make(chan Denial, 16)}
	cfg.Rules = f.rules.Rules
	cfg.OnDeny = func(job string, d Denial) {
		if job != "job-1" {
			t.Errorf("denial reported for job %q", job)
		}
		f.denied <- d
	}
	if cfg.Private == nil {
		cfg.Private = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	}
	f.proxy = New(cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.closer = f.proxy.Serve("job-1", ln)
	t.Cleanup(func() { f.closer.Close() })
	f.url = &url.URL{Scheme: "http", Host: ln.Addr().String()}
	return f
}

func (f *fixture) client(tlsCfg *tls.Config) *http.Client {
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{Proxy: http.ProxyURL(f.url), TLSClientConfig: tlsCfg, DisableKeepAlives: true},
	}
}

func hostPort(t testing.TB, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func hello(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s host=%s proxy-auth=%q", name, r.URL.Path, r.Host, r.Header.Get("Proxy-Authorization"))
	})
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestAllowedPlainHTTPIsForwarded(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(hello("allowed"))
	defer srv.Close()
	f := setup(t, Config{}, hostPort(t, srv.URL))

	req, _ := http.NewRequest("GET", srv.URL+"/x", nil)
	req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
	res, err := f.client(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.HasPrefix(string(body), "allowed /x") {
		t.Fatalf("got %d %q", res.StatusCode, body)
	}
	if !strings.Contains(string(body), `proxy-auth=""`) {
		t.Errorf("the proxy passed its own credentials on to the destination: %q", body)
	}
}

func TestAllowedTLSGoesThroughCONNECT(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(hello("tls"))
	defer srv.Close()
	f := setup(t, Config{}, hostPort(t, srv.URL))
	c := f.client(srv.Client().Transport.(*http.Transport).TLSClientConfig)
	if code, body := get(t, c, srv.URL+"/secure"); code != 200 || !strings.HasPrefix(body, "tls /secure") {
		t.Fatalf("got %d %q", code, body)
	}
}

func TestDestinationsOutsideTheListAreRefusedWithAReason(t *testing.T) {
	t.Parallel()
	allowed := httptest.NewServer(hello("allowed"))
	defer allowed.Close()
	other := httptest.NewServer(hello("other"))
	defer other.Close()
	f := setup(t, Config{}, hostPort(t, allowed.URL))

	code, body := get(t, f.client(nil), other.URL+"/")
	if code != http.StatusForbidden {
		t.Fatalf("plain HTTP to a destination not listed: got %d %q", code, body)
	}
	dest := hostPort(t, other.URL)
	for _, want := range []string{dest, "not in the job's egress allowlist", "PUT /v1/jobs/job-1/egress", "drydock egress job-1 --allow " + dest} {
		if !strings.Contains(body, want) {
			t.Errorf("refusal %q does not say %q", body, want)
		}
	}
	if d := <-f.denied; d.Dest() != dest || d.Status != http.StatusForbidden {
		t.Errorf("denial reported as %+v", d)
	}

	// CONNECT is refused the same way, before any byte reaches the server.
	status, body := rawConnect(t, f.url.Host, dest)
	if !strings.Contains(status, " 403 ") || !strings.Contains(body, dest) {
		t.Fatalf("CONNECT to a destination not listed: %q %q", status, body)
	}
	<-f.denied
}

// rawConnect sends CONNECT dest and returns the status line and body.
func rawConnect(t *testing.T, proxy, dest string) (string, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxy, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dest, dest)
	res, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	return fmt.Sprintf(" %d ", res.StatusCode), string(b)
}

func TestNonPublicAddressesNeedTheOperator(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(hello("internal"))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(hostPort(t, srv.URL))
	lookup := func(ctx context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "rebound.example":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		case "mixed.example":
			return []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, errors.New("no such host")
	}
	none := []netip.Prefix{}
	cases := []struct {
		name    string
		private []netip.Prefix
		rule    string
		url     string
		want    int
		reason  string
	}{
		{"an address rule to loopback", none, "127.0.0.1:" + port, srv.URL, 403, "not a public address"},
		{"a name that resolves to loopback", none, "rebound.example", "http://rebound.example:" + port, 403, "resolves to 127.0.0.1"},
		{"a name rule opened by the operator", []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, "rebound.example", "http://rebound.example:" + port, 200, ""},
		{"only the opened one of several addresses", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, "mixed.example", "http://mixed.example:" + port, 200, ""},
		{"a name that does not resolve", none, "nowhere.example", "http://nowhere.example:" + port, 502, "does not resolve"},
		{"a CIDR rule covering loopback", none, "127.0.0.0/8", srv.URL, 403, "not a public address"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, Config{LookupIP: lookup, Private: tc.private}, tc.rule)
			code, body := get(t, f.client(nil), tc.url)
			if code != tc.want || !strings.Contains(body, tc.reason) {
				t.Fatalf("got %d %q; want %d with %q", code, body, tc.want, tc.reason)
			}
		})
	}
}

func TestUnreadableListFailsClosed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(hello("x"))
	defer srv.Close()
	f := setup(t, Config{}, hostPort(t, srv.URL))
	f.rules.mu.Lock()
	f.rules.err = errors.New("store down")
	f.rules.mu.Unlock()
	if code, body := get(t, f.client(nil), srv.URL); code != http.StatusServiceUnavailable || strings.Contains(body, "store down") {
		t.Fatalf("got %d %q", code, body)
	}
}

func TestChangesApplyToNewAndOpenConnections(t *testing.T) {
	t.Parallel()
	a := httptest.NewServer(hello("a"))
	defer a.Close()
	b := httptest.NewServer(hello("b"))
	defer b.Close()
	echo := echoServer(t)
	f := setup(t, Config{RulesTTL: time.Hour, RecheckInterval: time.Hour}, hostPort(t, a.URL), echo)

	tunnel := openTunnel(t, f.url.Host, echo)
	roundTrip(t, tunnel, "ping")
	if code, _ := get(t, f.client(nil), b.URL); code != 403 {
		t.Fatalf("b before the change: %d", code)
	}

	f.rules.set(hostPort(t, b.URL))
	f.proxy.Changed("job-1")

	if code, _ := get(t, f.client(nil), b.URL); code != 200 {
		t.Errorf("b after it was allowed: %d", code)
	}
	if code, _ := get(t, f.client(nil), a.URL); code != 403 {
		t.Errorf("a after it was removed: %d", code)
	}
	tunnel.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := tunnel.Read(make([]byte, 1)); err == nil {
		t.Errorf("the tunnel to a removed destination stayed open (read %d bytes)", n)
	}
}

func TestRecheckClosesTunnelsWithoutAChangeNotice(t *testing.T) {
	t.Parallel()
	echo := echoServer(t)
	f := setup(t, Config{RulesTTL: time.Millisecond, RecheckInterval: 50 * time.Millisecond}, echo)
	tunnel := openTunnel(t, f.url.Host, echo)
	roundTrip(t, tunnel, "ping")
	f.rules.set() // as another replica would, without calling Changed
	tunnel.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := tunnel.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("tunnel not closed by the periodic recheck: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestConnectionsBeyondTheLimitAreAnswered503(t *testing.T) {
	t.Parallel()
	echo := echoServer(t)
	f := setup(t, Config{MaxConns: 1}, echo)
	tunnel := openTunnel(t, f.url.Host, echo)
	roundTrip(t, tunnel, "ping")
	status, body := rawConnect(t, f.url.Host, echo)
	if !strings.Contains(status, " 503 ") || !strings.Contains(body, "too many connections") {
		t.Fatalf("second connection: %q %q", status, body)
	}
	tunnel.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := openTunnelOrNil(t, f.url.Host, echo)
		if c != nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slot of a closed tunnel was never freed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHalfCloseIsPassedOn(t *testing.T) {
	t.Parallel()
	// A server that answers only after the client finished sending.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		fmt.Fprintf(c, "got %d bytes", len(b))
	}()
	f := setup(t, Config{}, ln.Addr().String())
	tunnel := openTunnel(t, f.url.Host, ln.Addr().String())
	io.WriteString(tunnel, "hello")
	tunnel.(*net.TCPConn).CloseWrite()
	tunnel.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(tunnel)
	if err != nil || string(b) != "got 5 bytes" {
		t.Fatalf("got %q, %v", b, err)
	}
}

func TestCloseEndsEverythingItStarted(t *testing.T) {
	echo := echoServer(t)
	before := runtime.NumGoroutine()
	f := setup(t, Config{}, echo)
	var tunnels []net.Conn
	for range 5 {
		c := openTunnel(t, f.url.Host, echo)
		roundTrip(t, c, "x")
		tunnels = append(tunnels, c)
	}
	done := make(chan error, 1)
	go func() { done <- f.closer.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with tunnels open")
	}
	for _, c := range tunnels {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Errorf("tunnel open after Close: %v", err)
		}
		c.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		t.Errorf("%d goroutines before, %d after Close", before, n)
	}
	if len(f.proxy.sessions) != 0 || len(f.proxy.cache) != 0 {
		t.Errorf("closed session still registered: %v %v", f.proxy.sessions, f.proxy.cache)
	}
}

func TestListenReplacesAStaleSocketAndLeavesANewerOne(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "egress.sock")
	p := New(Config{})
	old, err := p.Listen("job-1", path)
	if err != nil {
		t.Fatal(err)
	}
	// A second listener (a restarted orchestrator) takes the path over.
	newer, err := p.Listen("job-1", path)
	if err != nil {
		t.Fatalf("listen over a stale socket: %v", err)
	}
	defer newer.Close()
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o666 {
		t.Fatalf("socket mode: %v %v", fi, err)
	}
	old.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("closing the old listener removed the new socket: %v", err)
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("new socket not served: %v", err)
	}
	c.Close()
	newer.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("socket left after close: %v", err)
	}

	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Listen("job-1", path); err == nil {
		t.Error("Listen replaced a regular file")
	}
}

func TestPublicAddresses(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"93.184.215.14": true, "2606:4700::1111": true, "8.8.8.8": true,
		"127.0.0.1": false, "127.0.0.2": false, "::1": false, "10.1.2.3": false, "172.16.0.1": false,
		"192.168.1.1": false, "169.254.169.254": false, "100.64.0.1": false, "0.0.0.0": false, "::": false,
		"fe80::1": false, "fd00::1": false, "224.0.0.1": false, "255.255.255.255": false, "::ffff:127.0.0.1": false,
		"64:ff9b::a00:1": false, "2002:a00:1::": false, "198.18.0.1": false,
	} {
		if got := Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v, want %v", addr, got, want)
		}
	}
}

// echoServer echoes every connection; it returns its host:port.
func echoServer(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func openTunnel(t testing.TB, proxy, dest string) net.Conn {
	t.Helper()
	c := openTunnelOrNil(t, proxy, dest)
	if c == nil {
		t.Fatalf("CONNECT %s refused", dest)
	}
	return c
}

func openTunnelOrNil(t testing.TB, proxy, dest string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxy, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dest, dest)
	// Read the status byte by byte so that no tunnel data is buffered away.
	var head []byte
	for !strings.HasSuffix(string(head), "\r\n\r\n") {
		b := make([]byte, 1)
		if _, err := c.Read(b); err != nil {
			c.Close()
			return nil
		}
		head = append(head, b[0])
	}
	if !strings.HasPrefix(string(head), "HTTP/1.1 200") {
		c.Close()
		return nil
	}
	c.SetDeadline(time.Time{})
	return c
}

func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, len(msg))
	if _, err := io.ReadFull(c, b); err != nil || string(b) != msg {
		t.Fatalf("echo through the tunnel: %q %v", b, err)
	}
}

func TestIdleTunnelsAreClosed(t *testing.T) {
	t.Parallel()
	echo := echoServer(t)
	f := setup(t, Config{IdleTimeout: 300 * time.Millisecond}, echo)
	tunnel := openTunnel(t, f.url.Host, echo)
	// Busy for longer than the idle timeout: kept.
	for range 4 {
		roundTrip(t, tunnel, "x")
		time.Sleep(100 * time.Millisecond)
	}
	// Then quiet: closed.
	tunnel.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if _, err := tunnel.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("idle tunnel not closed: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("closed after %s of quiet, want about 300ms", d)
	}
}
