package egress

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// pods stands in for the runtime and the store: two sandboxes, each of
// its own job, with their own lists.
type pods struct {
	mu     sync.Mutex
	token  map[string]string // by sandbox id
	job    map[string]string // by sandbox id
	lists  map[string][]string
	lookup atomic.Int64
}

func (p *pods) Identify(ctx context.Context, id string) (string, string, error) {
	p.lookup.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.token[id]; !ok {
		return "", "", drydock.Errorf(drydock.ENOTFOUND, "sandbox %s not found", id)
	}
	return p.job[id], p.token[id], nil
}

func (p *pods) Rules(ctx context.Context, job string) ([]drydock.EgressRule, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return drydock.ParseEgress(p.lists[job])
}

type gatewayFixture struct {
	pods    *pods
	proxy   *Proxy
	gw      *Gateway
	addr    string
	denials chan string // job ids
}

func setupGateway(t testing.TB, cfg Config, gcfg GatewayConfig) *gatewayFixture {
	t.Helper()
	f := &gatewayFixture{
		pods: &pods{
			token: map[string]string{"sb-a": "token-a", "sb-b": "token-b"},
			job:   map[string]string{"sb-a": "job-a", "sb-b": "job-b"},
			lists: map[string][]string{},
		},
		denials: make(chan string, 16),
	}
	cfg.Rules = f.pods.Rules
	cfg.Private = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	cfg.OnDeny = func(job string, d Denial) { f.denials <- job }
	f.proxy = New(cfg)
	gcfg.Identify = f.pods.Identify
	f.gw = f.proxy.NewGateway(gcfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	go f.gw.Serve(ln)
	t.Cleanup(func() { f.gw.Close() })
	return f
}

// dial is what toolboxd's forwarder does for sandbox id holding token.
func (f *gatewayFixture) dial(t testing.TB, id, token string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", f.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, toolbox.EgressHello(toolbox.TokenHash(token), id))
	return c
}

// client is a sandbox's HTTP client behind the forwarder.
func (f *gatewayFixture) client(t testing.TB, id, token string, tlsCfg *http.Transport) *http.Client {
	tr := &http.Transport{
		Proxy:             http.ProxyURL(&url.URL{Scheme: "http", Host: "forwarder.invalid:3128"}),
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return f.dial(t, id, token), nil
		},
	}
	if tlsCfg != nil {
		tr.TLSClientConfig = tlsCfg.TLSClientConfig
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: tr}
}

func TestGatewayAppliesEachSandboxsOwnList(t *testing.T) {
	t.Parallel()
	a := httptest.NewServer(hello("a"))
	defer a.Close()
	b := httptest.NewTLSServer(hello("b"))
	defer b.Close()
	f := setupGateway(t, Config{}, GatewayConfig{})
	f.pods.lists["job-a"] = []string{hostPort(t, a.URL)}
	f.pods.lists["job-b"] = []string{hostPort(t, b.URL)}
	tlsB := b.Client().Transport.(*http.Transport)

	if code, body := get(t, f.client(t, "sb-a", "token-a", nil), a.URL+"/x"); code != 200 || !strings.HasPrefix(body, "a /x") {
		t.Errorf("a from sandbox a: %d %q", code, body)
	}
	if code, body := get(t, f.client(t, "sb-b", "token-b", tlsB), b.URL+"/y"); code != 200 || !strings.HasPrefix(body, "b /y") {
		t.Errorf("b (TLS, CONNECT) from sandbox b: %d %q", code, body)
	}
	if code, body := get(t, f.client(t, "sb-a", "token-a", nil), "http://"+hostPort(t, b.URL)+"/"); code != 403 || !strings.Contains(body, "not in the job's egress allowlist") {
		t.Errorf("b from sandbox a: %d %q", code, body)
	}
	select {
	case job := <-f.denials:
		if job != "job-a" {
			t.Errorf("refusal reported for %s, want job-a", job)
		}
	case <-time.After(5 * time.Second):
		t.Error("the refusal was not reported")
	}
}

func TestGatewayRefusesWhoCannotProveTheSandbox(t *testing.T) {
	t.Parallel()
	a := httptest.NewServer(hello("a"))
	defer a.Close()
	f := setupGateway(t, Config{}, GatewayConfig{HelloTimeout: 500 * time.Millisecond})
	f.pods.lists["job-a"] = []string{hostPort(t, a.URL)}
	f.pods.lists["job-b"] = []string{hostPort(t, a.URL)}

	for _, c := range []struct{ name, id, token string }{
		{"another sandbox's token", "sb-a", "token-b"},
		{"a made-up token", "sb-b", "guess"},
		{"an unknown sandbox", "sb-zzz", "token-a"},
	} {
		code, body := get(t, f.client(t, c.id, c.token, nil), a.URL)
		if code != 403 || !strings.Contains(body, "not recognised") {
			t.Errorf("%s: %d %q", c.name, code, body)
		}
	}
	for _, c := range []struct{ name, send, want string }{
		{"not a hello", "GET http://" + hostPort(t, a.URL) + "/ HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400"},
		{"a hello of another version", "DRYDOCK-EGRESS/9 sb-a 00\n", "HTTP/1.1 400"},
		{"a hello too long", "DRYDOCK-EGRESS/1 " + strings.Repeat("x", 300) + "\n", "HTTP/1.1 400"},
	} {
		conn, err := net.DialTimeout("tcp", f.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(conn, c.send)
		line, _ := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if !strings.HasPrefix(line, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, line, c.want)
		}
	}
	// Silence is cut off at the hello timeout.
	conn, err := net.DialTimeout("tcp", f.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("a connection that never said hello stayed open: %v", err)
	}
}

func TestGatewayChangesCloseOpenTunnels(t *testing.T) {
	t.Parallel()
	echo := echoServer(t)
	f := setupGateway(t, Config{RulesTTL: time.Hour, RecheckInterval: time.Hour}, GatewayConfig{})
	f.pods.lists["job-a"] = []string{echo}
	conn := f.dial(t, "sb-a", "token-a")
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, "CONNECT "+echo+" HTTP/1.1\r\nHost: "+echo+"\r\n\r\n")
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", res, err)
	}
	io.WriteString(conn, "ping\n")
	if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("echo: %q %v", line, err)
	}
	f.pods.mu.Lock()
	f.pods.lists["job-a"] = nil
	f.pods.mu.Unlock()
	f.proxy.Changed("job-a")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("the tunnel outlived its destination's removal: %v", err)
	}
}

func TestGatewayCachesLookupsAndReapsIdleSessions(t *testing.T) {
	t.Parallel()
	a := httptest.NewServer(hello("a"))
	defer a.Close()
	f := setupGateway(t, Config{}, GatewayConfig{IdentifyTTL: time.Hour, SessionIdle: 100 * time.Millisecond})
	f.pods.lists["job-a"] = []string{hostPort(t, a.URL)}
	c := f.client(t, "sb-a", "token-a", nil)
	for range 20 {
		if code, _ := get(t, c, a.URL); code != 200 {
			t.Fatalf("GET: %d", code)
		}
	}
	for range 5 {
		get(t, f.client(t, "sb-nope", "x", nil), a.URL)
	}
	if n := f.pods.lookup.Load(); n != 2 {
		t.Errorf("%d sandbox lookups for 25 connections from 2 ids, want 2", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.proxy.mu.Lock()
		n := len(f.proxy.sessions)
		f.proxy.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions still open long after their last connection", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A new connection opens a new session.
	if code, _ := get(t, c, a.URL); code != 200 {
		t.Fatalf("GET after the reap: %d", code)
	}
}

func TestGatewayCloseEndsEverything(t *testing.T) {
	t.Parallel()
	echo := echoServer(t)
	f := setupGateway(t, Config{}, GatewayConfig{})
	f.pods.lists["job-a"] = []string{echo}
	tunnel := f.dial(t, "sb-a", "token-a")
	defer tunnel.Close()
	io.WriteString(tunnel, "CONNECT "+echo+" HTTP/1.1\r\nHost: "+echo+"\r\n\r\n")
	br := bufio.NewReader(tunnel)
	tunnel.SetDeadline(time.Now().Add(10 * time.Second))
	if res, err := http.ReadResponse(br, nil); err != nil || res.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", res, err)
	}
	pending, err := net.DialTimeout("tcp", f.addr, 5*time.Second) // no hello yet
	if err != nil {
		t.Fatal(err)
	}
	defer pending.Close()
	time.Sleep(50 * time.Millisecond)
	done := make(chan struct{})
	go func() { f.gw.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung")
	}
	for name, c := range map[string]net.Conn{"tunnel": tunnel, "pending": pending} {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		var err error
		if name == "tunnel" {
			_, err = br.ReadByte()
		} else {
			_, err = c.Read(make([]byte, 1))
		}
		if err == nil || isTimeout(err) {
			t.Errorf("%s connection open after Close: %v", name, err)
		}
	}
	if _, err := net.DialTimeout("tcp", f.addr, time.Second); err == nil {
		t.Error("the gateway still accepts connections after Close")
	}
}
