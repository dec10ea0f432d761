package egress

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkPlainHTTP is one small GET through the proxy (judged, dialed and
// forwarded anew each time), against the same GET made directly, and
// through the gateway (a hello checked first; the sandbox lookup cached).
func BenchmarkPlainHTTP(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	for _, mode := range []string{"direct", "proxy", "gateway"} {
		b.Run(mode, func(b *testing.B) {
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			switch mode {
			case "proxy":
				c = setup(b, Config{}, hostPort(b, srv.URL)).client(nil)
			case "gateway":
				f := setupGateway(b, Config{}, GatewayConfig{})
				f.pods.lists["job-a"] = []string{hostPort(b, srv.URL)}
				c = f.client(b, "sb-a", "token-a", nil)
			}
			for b.Loop() {
				res, err := c.Get(srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		})
	}
}

// BenchmarkTunnelThroughput pushes 1 MiB writes through one CONNECT tunnel
// to an echo server and reads them back.
func BenchmarkTunnelThroughput(b *testing.B) {
	echo := echoServer(b)
	f := setup(b, Config{}, echo)
	c := openTunnel(b, f.url.Host, echo)
	defer c.Close()
	buf := make([]byte, 1<<20)
	back := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		go c.Write(buf)
		if _, err := io.ReadFull(c, back); err != nil {
			b.Fatal(err)
		}
	}
}
