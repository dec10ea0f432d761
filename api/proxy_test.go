package api_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/des"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
	"github.com/drydockhq/drydock/toolbox"
	"github.com/google/go-cmp/cmp"
)

// fakeVNC is a small RFB 3.8 server behind toolboxd's VNC WebSocket route: it
// authenticates with a password (or none), answers update requests with a
// raw frame, and records what viewers send.
type fakeVNC struct {
	password string
	w, h     int
	mu       sync.Mutex
	types    []byte // client message types received after init
	shared   []byte // ClientInit shared flags received
	authFail int
}

func (f *fakeVNC) Components(context.Context) []toolbox.Component {
	return []toolbox.Component{{Name: "vnc", Ready: true}}
}

func (f *fakeVNC) Screenshot(context.Context) (*toolbox.Screenshot, error) {
	return nil, drydock.Errorf(drydock.ENOTIMPLEMENTED, "fake")
}

func (f *fakeVNC) Do(context.Context, toolbox.DesktopAction) (*toolbox.DesktopResult, error) {
	return nil, drydock.Errorf(drydock.ENOTIMPLEMENTED, "fake")
}

func (f *fakeVNC) ServeVNC(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"binary"}, InsecureSkipVerify: true})
	if err != nil {
		return
	}
	c.SetReadLimit(-1)
	nc := websocket.NetConn(context.Background(), c, websocket.MessageBinary)
	defer nc.Close()
	f.serve(nc)
}

func (f *fakeVNC) received() ([]byte, []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.types), slices.Clone(f.shared)
}

// testVNCResponse is VNC authentication written independently of the
// proxy's, so that the two check each other.
func testVNCResponse(password string, challenge []byte) []byte {
	key := make([]byte, 8)
	copy(key, password)
	for i := range key {
		key[i] = bits.Reverse8(key[i])
	}
	c, _ := des.NewCipher(key)
	out := make([]byte, 16)
	for i := 0; i < 16; i += 8 {
		c.Encrypt(out[i:i+8], challenge[i:i+8])
	}
	return out
}

func (f *fakeVNC) serve(c net.Conn) {
	br := bufio.NewReader(c)
	io.WriteString(c, "RFB 003.008\n")
	var v [12]byte
	if _, err := io.ReadFull(br, v[:]); err != nil {
		return
	}
	if f.password != "" {
		c.Write([]byte{1, 2})
		if ch, _ := br.ReadByte(); ch != 2 {
			return
		}
		challenge := make([]byte, 16)
		rand.Read(challenge)
		c.Write(challenge)
		var resp [16]byte
		if _, err := io.ReadFull(br, resp[:]); err != nil {
			return
		}
		if !bytes.Equal(resp[:], testVNCResponse(f.password, challenge)) {
			f.mu.Lock()
			f.authFail++
			f.mu.Unlock()
			c.Write([]byte{0, 0, 0, 1, 0, 0, 0, 4, 'n', 'o', 'p', 'e'})
			return
		}
	} else {
		c.Write([]byte{1, 1})
		if ch, _ := br.ReadByte(); ch != 1 {
			return
		}
	}
	c.Write([]byte{0, 0, 0, 0})
	shared, err := br.ReadByte()
	if err != nil {
		return
	}
	f.mu.Lock()
	f.shared = append(f.shared, shared)
	f.mu.Unlock()
	init := binary.BigEndian.AppendUint16(nil, uint16(f.w))
	init = binary.BigEndian.AppendUint16(init, uint16(f.h))
	init = append(init, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0)
	init = binary.BigEndian.AppendUint32(init, 4)
	c.Write(append(init, "fake"...))
	frame := []byte{0, 0, 0, 1, 0, 0, 0, 0}
	frame = binary.BigEndian.AppendUint16(frame, uint16(f.w))
	frame = binary.BigEndian.AppendUint16(frame, uint16(f.h))
	frame = append(frame, 0, 0, 0, 0)
	frame = append(frame, bytes.Repeat([]byte{0x20, 0x40, 0x80, 0}, f.w*f.h)...)
	skip := func(n int) bool { _, err := io.CopyN(io.Discard, br, int64(n)); return err == nil }
	for {
		t, err := br.ReadByte()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.types = append(f.types, t)
		f.mu.Unlock()
		ok := true
		switch t {
		case 0:
			ok = skip(19)
		case 2:
			var h [3]byte
			if _, err := io.ReadFull(br, h[:]); err != nil {
				return
			}
			ok = skip(4 * int(binary.BigEndian.Uint16(h[1:])))
		case 3:
			if ok = skip(9); ok {
				_, err = c.Write(frame)
				ok = err == nil
			}
		case 4:
			ok = skip(7)
		case 5:
			ok = skip(5)
		case 6:
			var h [7]byte
			if _, err := io.ReadFull(br, h[:]); err != nil {
				return
			}
			ok = skip(int(binary.BigEndian.Uint32(h[3:])))
		default:
			return
		}
		if !ok {
			return
		}
	}
}

// viewer is an RFB client over a WebSocket, as noVNC is.
type viewer struct {
	c    *websocket.Conn
	nc   net.Conn
	br   *bufio.Reader
	w, h int
	buf  []byte
}

func dialViewer(ctx context.Context, wsURL string, header http.Header, password string) (*viewer, error) {
	c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{Subprotocols: []string{"binary"}, HTTPHeader: header})
	if err != nil {
		return nil, err
	}
	if c.Subprotocol() != "binary" {
		c.CloseNow()
		return nil, fmt.Errorf("subprotocol %q, want binary", c.Subprotocol())
	}
	c.SetReadLimit(-1)
	nc := websocket.NetConn(context.Background(), c, websocket.MessageBinary)
	v := &viewer{c: c, nc: nc, br: bufio.NewReaderSize(nc, 64<<10)}
	if err := v.handshake(password); err != nil {
		nc.Close()
		return nil, err
	}
	return v, nil
}

func (v *viewer) handshake(password string) error {
	var ver [12]byte
	if _, err := io.ReadFull(v.br, ver[:]); err != nil {
		return fmt.Errorf("version: %w", err)
	}
	if string(ver[:]) != "RFB 003.008\n" {
		return fmt.Errorf("server version %q", ver)
	}
	io.WriteString(v.nc, "RFB 003.008\n")
	n, err := v.br.ReadByte()
	if err != nil || n == 0 {
		return fmt.Errorf("security types: %d %v", n, err)
	}
	types := make([]byte, n)
	io.ReadFull(v.br, types)
	switch {
	case bytes.Equal(types, []byte{1}):
		v.nc.Write([]byte{1})
	case bytes.Contains(types, []byte{2}) && password != "":
		v.nc.Write([]byte{2})
		ch := make([]byte, 16)
		io.ReadFull(v.br, ch)
		v.nc.Write(testVNCResponse(password, ch))
	default:
		return fmt.Errorf("offered security types %v", types)
	}
	var res [4]byte
	if _, err := io.ReadFull(v.br, res[:]); err != nil || res != [4]byte{} {
		return fmt.Errorf("security result %v %v", res, err)
	}
	v.nc.Write([]byte{0}) // not shared: the proxy must share anyway
	var init [24]byte
	if _, err := io.ReadFull(v.br, init[:]); err != nil {
		return fmt.Errorf("server init: %w", err)
	}
	v.w, v.h = int(binary.BigEndian.Uint16(init[0:])), int(binary.BigEndian.Uint16(init[2:]))
	_, err = io.CopyN(io.Discard, v.br, int64(binary.BigEndian.Uint32(init[20:])))
	return err
}

// frame asks for a full update and reads it whole.
func (v *viewer) frame() error {
	req := []byte{3, 0, 0, 0, 0, 0}
	req = binary.BigEndian.AppendUint16(req, uint16(v.w))
	req = binary.BigEndian.AppendUint16(req, uint16(v.h))
	if _, err := v.nc.Write(req); err != nil {
		return err
	}
	var hdr [4]byte
	if _, err := io.ReadFull(v.br, hdr[:]); err != nil {
		return err
	}
	if hdr[0] != 0 {
		return fmt.Errorf("message type %d, want a framebuffer update", hdr[0])
	}
	for range binary.BigEndian.Uint16(hdr[2:]) {
		var rect [12]byte
		if _, err := io.ReadFull(v.br, rect[:]); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint16(rect[4:])) * int(binary.BigEndian.Uint16(rect[6:])) * 4
		if cap(v.buf) < n {
			v.buf = make([]byte, n)
		}
		if _, err := io.ReadFull(v.br, v.buf[:n]); err != nil {
			return err
		}
	}
	return nil
}

// input sends what a person at the keyboard and mouse would.
func (v *viewer) input() error {
	msgs := [][]byte{
		{4, 1, 0, 0, 0, 0, 0, 'a'},              // key down 'a'
		{5, 1, 0, 10, 0, 10},                    // pointer click at 10,10
		{6, 0, 0, 0, 0, 0, 0, 3, 'h', 'e', 'y'}, // clipboard "hey"
		{2, 0, 0, 1, 0, 0, 0, 0},                // SetEncodings: raw
	}
	for _, m := range msgs {
		if _, err := v.nc.Write(m); err != nil {
			return err
		}
	}
	return nil
}

func (v *viewer) close() { v.nc.Close() }

// desktopJob starts a toolboxd with a fake desktop and a running desktop job
// in it, and returns the job and a link of the given mode.
func desktopJob(t testing.TB, b *liveBundle, vnc *fakeVNC, id string, control bool) (*drydock.Job, api.Link) {
	t.Helper()
	sb := startToolbox(t, id, t.TempDir(), vnc)
	sb.VNCPassword = "pw-" + id
	if vnc.password == "" {
		vnc.password = sb.VNCPassword
	}
	j := b.runningJob(t, b.alice, `{"task": "x", "profile": "desktop"}`, sb)
	return j, b.link(t, b.alice, j.ID, "desktop", control)
}

func TestDesktopProxyViewOnly(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	vnc := &fakeVNC{w: 32, h: 16}
	_, l := desktopJob(t, b, vnc, "sb-view", false)
	v, err := dialViewer(t.Context(), l.WebSocketURL, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	if v.w != 32 || v.h != 16 {
		t.Fatalf("server init %dx%d", v.w, v.h)
	}
	if err := v.input(); err != nil {
		t.Fatal(err)
	}
	if err := v.frame(); err != nil {
		t.Fatal(err)
	}
	types, shared := vnc.received()
	// Only the SetEncodings and the update request get through.
	if diff := cmp.Diff([]byte{2, 3}, types); diff != "" {
		t.Errorf("messages the desktop received (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]byte{1}, shared); diff != "" {
		t.Errorf("shared flag (-want +got):\n%s", diff)
	}
}

func TestDesktopProxyControl(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	vnc := &fakeVNC{w: 8, h: 8}
	_, l := desktopJob(t, b, vnc, "sb-control", true)
	v, err := dialViewer(t.Context(), l.WebSocketURL, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	v.input()
	if err := v.frame(); err != nil {
		t.Fatal(err)
	}
	types, _ := vnc.received()
	if diff := cmp.Diff([]byte{4, 5, 6, 2, 3}, types); diff != "" {
		t.Errorf("messages the desktop received (-want +got):\n%s", diff)
	}
}

func TestDesktopProxyBearerAndOrigin(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	vnc := &fakeVNC{w: 8, h: 8}
	j, _ := desktopJob(t, b, vnc, "sb-bearer", false)
	ws := "ws" + strings.TrimPrefix(b.url, "http") + "/jobs/" + j.ID + "/desktop/websockify"
	if _, err := dialViewer(t.Context(), ws, http.Header{"Authorization": {"Bearer " + b.bob}}, ""); err == nil {
		t.Error("bob opened alice's desktop")
	}
	if _, err := dialViewer(t.Context(), ws, nil, ""); err == nil {
		t.Error("an anonymous viewer opened alice's desktop")
	}
	// A page of another site cannot ride on a token (or on development
	// mode) to open the desktop.
	if _, err := dialViewer(t.Context(), ws, http.Header{"Authorization": {"Bearer " + b.alice}, "Origin": {"http://evil.example"}}, ""); err == nil {
		t.Error("a foreign origin opened the desktop")
	}
	v, err := dialViewer(t.Context(), ws+"?control=1", http.Header{"Authorization": {"Bearer " + b.alice}}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	v.input()
	v.frame()
	if types, _ := vnc.received(); !bytes.Contains(types, []byte{4}) {
		t.Errorf("the owner's bearer control did not reach the desktop: %v", types)
	}
}

func TestDesktopProxyWrongPassword(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	vnc := &fakeVNC{w: 8, h: 8, password: "right-pw"}
	_, l := desktopJob(t, b, vnc, "sb-wrongpw", false)
	c, _, err := websocket.Dial(t.Context(), l.WebSocketURL, &websocket.DialOptions{Subprotocols: []string{"binary"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	_, _, err = c.Read(t.Context())
	if websocket.CloseStatus(err) != websocket.StatusInternalError || !strings.Contains(err.Error(), "refused the sandbox's VNC password") {
		t.Errorf("close: %v", err)
	}
	if vnc.authFail != 1 {
		t.Errorf("auth failures %d", vnc.authFail)
	}
}

func TestDesktopProxyClosesWhenJobEnds(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	vnc := &fakeVNC{w: 8, h: 8}
	j, l := desktopJob(t, b, vnc, "sb-end", false)
	v, err := dialViewer(t.Context(), l.WebSocketURL, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	if err := v.frame(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	b.finish(t, j.ID, drydock.StatusComplete, nil)
	_, _, err = v.c.Read(t.Context())
	if websocket.CloseStatus(err) != websocket.StatusNormalClosure || !strings.Contains(err.Error(), "the job has ended") {
		t.Errorf("close after the job ended: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("closed %s after the job ended", d)
	}
	// And the gauge went back down.
	deadline := time.Now().Add(2 * time.Second)
	for {
		_, data := b.get(t, "/metrics", "")
		if bytes.Contains(data, []byte(`drydock_live_connections{kind="desktop"} 0`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gauge not back to 0:\n%s", grepLines(data, "drydock_live"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDesktopProxyClosesOnShutdown(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	vnc := &fakeVNC{w: 8, h: 8}
	_, l := desktopJob(t, b, vnc, "sb-shutdown", false)
	v, err := dialViewer(t.Context(), l.WebSocketURL, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	b.srv.Shutdown()
	_, _, err = v.c.Read(t.Context())
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Errorf("close on shutdown: %v", err)
	}
}

func TestDesktopProxyHeadlessSandbox(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	// A desktop job whose toolboxd has no desktop (a misbuilt image).
	sb := startToolbox(t, "sb-nodesk", t.TempDir(), nil)
	j := b.runningJob(t, b.alice, `{"task": "x", "profile": "desktop"}`, sb)
	l := b.link(t, b.alice, j.ID, "desktop", false)
	u, _ := url.Parse(l.WebSocketURL)
	resp, data := b.get(t, u.RequestURI(), "")
	if resp.StatusCode != 501 || errorCode(t, data) != drydock.ENOTIMPLEMENTED {
		t.Errorf("no desktop: %d %s", resp.StatusCode, data)
	}
}

// Twenty viewers on twenty jobs at once through one server, without errors.
func TestDesktopTwentyViewers(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	const n = 20
	links := make([]api.Link, n)
	for i := range n {
		_, links[i] = desktopJob(t, b, &fakeVNC{w: 128, h: 64}, fmt.Sprintf("sb-many-%02d", i), false)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := dialViewer(t.Context(), links[i].WebSocketURL, nil, "")
			if err != nil {
				errs <- fmt.Errorf("viewer %d: %w", i, err)
				return
			}
			defer v.close()
			for range 50 {
				if err := v.frame(); err != nil {
					errs <- fmt.Errorf("viewer %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func grepLines(data []byte, s string) string {
	var out []string
	for l := range strings.SplitSeq(string(data), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// benchViewer measures the round trip of one full update (request to last
// byte) of a w x h x 32-bit frame, directly against toolboxd or through the
// orchestrator.
func benchViewer(b *testing.B, w, h int, proxied bool) {
	lb := setupLive(b, false, nil)
	vnc := &fakeVNC{w: w, h: h, password: ""}
	sb := startToolbox(b, "sb-bench", b.TempDir(), vnc)
	var v *viewer
	var err error
	if proxied {
		j := lb.runningJob(b, lb.alice, `{"task": "x", "profile": "desktop"}`, sb)
		v, err = dialViewer(b.Context(), lb.link(b, lb.alice, j.ID, "desktop", false).WebSocketURL, nil, "")
	} else {
		tb := toolbox.New(sb.Endpoint, sb.Token)
		defer tb.Close()
		c, _, derr := websocket.Dial(b.Context(), tb.BaseURL()+"/v1/desktop/vnc", &websocket.DialOptions{
			HTTPClient: &http.Client{Transport: tb.Transport()}, Subprotocols: []string{"binary"},
			HTTPHeader: http.Header{"Authorization": {"Bearer " + sb.Token}},
		})
		if derr != nil {
			b.Fatal(derr)
		}
		c.SetReadLimit(-1)
		nc := websocket.NetConn(context.Background(), c, websocket.MessageBinary)
		v = &viewer{c: c, nc: nc, br: bufio.NewReaderSize(nc, 64<<10)}
		err = v.handshake("")
	}
	if err != nil {
		b.Fatal(err)
	}
	defer v.close()
	for range 20 { // warm up connections and buffers
		if err := v.frame(); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.SetBytes(int64(w * h * 4))
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if err := v.frame(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkDesktopFrame compares a frame's round trip directly against
// toolboxd's VNC WebSocket with the same through the orchestrator's proxy;
// the difference of the p50s is the latency the proxy adds.
func BenchmarkDesktopFrame(b *testing.B) {
	for _, size := range []struct {
		name string
		w, h int
	}{{"64x64", 64, 64}, {"1280x800", 1280, 800}} {
		b.Run(size.name+"/direct", func(b *testing.B) { benchViewer(b, size.w, size.h, false) })
		b.Run(size.name+"/proxy", func(b *testing.B) { benchViewer(b, size.w, size.h, true) })
	}
}

// jupyterStandIn is a toolboxd that speaks the Jupyter routes the
// orchestrator needs (POST /v1/jupyter/start, /v1/jupyter/proxy/...), with
// an HTTP and WebSocket echo in place of Jupyter.
type jupyterStandIn struct {
	sock    string
	token   string
	release chan struct{} // closed when start may finish
	noRoute bool          // answer like a toolboxd without Jupyter support
	mu      sync.Mutex
	starts  []string
	reqs    []jupyterSeen
}

type jupyterSeen struct {
	Method, Path, Query, Auth, Cookie, Host, Body string
}

func startJupyterStandIn(t testing.TB) *jupyterStandIn {
	t.Helper()
	dir, err := os.MkdirTemp("", "ddjup")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	j := &jupyterStandIn{sock: filepath.Join(dir, "tb.sock"), token: "tb-jupyter", release: make(chan struct{})}
	close(j.release)
	ln, err := net.Listen("unix", j.sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: j}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return j
}

func (j *jupyterStandIn) sandbox(id string) *drydock.Sandbox {
	return &drydock.Sandbox{ID: id, State: drydock.SandboxRunning, Token: j.token, Endpoint: drydock.Endpoint{Network: "unix", Address: j.sock}}
}

func (j *jupyterStandIn) requests() []jupyterSeen {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.reqs)
}

func (j *jupyterStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+j.token {
		http.Error(w, `{"error":{"code":"unauthorized","message":"bad token"}}`, 401)
		return
	}
	if j.noRoute {
		w.WriteHeader(404)
		io.WriteString(w, `{"error":{"code":"not_found","message":"no route"}}`)
		return
	}
	switch {
	case r.Method == "POST" && r.URL.Path == "/v1/jupyter/start":
		var req struct {
			BaseURL string `json:"base_url"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		<-j.release
		j.mu.Lock()
		j.starts = append(j.starts, req.BaseURL)
		j.mu.Unlock()
		io.WriteString(w, `{"ready": true}`)
	case strings.HasPrefix(r.URL.Path, "/v1/jupyter/proxy/"):
		body, _ := io.ReadAll(r.Body)
		seen := jupyterSeen{Method: r.Method, Path: strings.TrimPrefix(r.URL.Path, "/v1/jupyter/proxy"), Query: r.URL.RawQuery,
			Auth: r.Header.Get("Authorization"), Cookie: r.Header.Get("Cookie"), Host: r.Host, Body: string(body)}
		j.mu.Lock()
		j.reqs = append(j.reqs, seen)
		j.mu.Unlock()
		if r.Header.Get("Upgrade") != "" {
			c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"v1.kernel.websocket.jupyter.org"}, InsecureSkipVerify: true})
			if err != nil {
				return
			}
			defer c.CloseNow()
			for {
				typ, msg, err := c.Read(context.Background())
				if err != nil {
					return
				}
				if err := c.Write(context.Background(), typ, append([]byte("echo:"), msg...)); err != nil {
					return
				}
			}
		}
		base, _, _ := strings.Cut(seen.Path, "/jupyter/")
		http.SetCookie(w, &http.Cookie{Name: "_xsrf", Value: "x", Path: base + "/jupyter/"})
		http.SetCookie(w, &http.Cookie{Name: "drydock_jupyter", Value: "forged", Path: "/"})
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(seen)
	default:
		http.NotFound(w, r)
	}
}

func TestJupyterProxy(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	jup := startJupyterStandIn(t)
	jup.release = make(chan struct{})
	j := b.runningJob(t, b.alice, `{"task": "x"}`, jup.sandbox("sb-jup"))
	base := "/jobs/" + j.ID + "/jupyter/"

	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	get := func(path, accept string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", b.url+path, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, data
	}
	// Opening the link while Jupyter starts shows a page that reloads.
	l := b.link(t, b.alice, j.ID, "jupyter", false)
	resp, data := get(strings.TrimPrefix(l.URL, b.url), "text/html")
	if resp.StatusCode != 503 || !bytes.Contains(data, []byte("Starting Jupyter")) || resp.Request.URL.Query().Has("t") {
		t.Fatalf("while starting: %d %s (url %s)", resp.StatusCode, data, resp.Request.URL)
	}
	close(jup.release)
	// An API request waits for the start instead.
	resp, data = get(base+"api/status?x=1", "application/json")
	if resp.StatusCode != 200 {
		t.Fatalf("proxied: %d %s", resp.StatusCode, data)
	}
	var seen jupyterSeen
	json.Unmarshal(data, &seen)
	u, _ := url.Parse(b.url)
	want := jupyterSeen{Method: "GET", Path: base + "api/status", Query: "x=1", Auth: "Bearer tb-jupyter", Host: u.Host}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("what the sandbox saw (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{base}, jup.starts); diff != "" {
		t.Errorf("starts (-want +got):\n%s", diff)
	}
	// The sandbox's cookies pass, but it cannot forge the orchestrator's.
	cookies := jar.Cookies(&url.URL{Scheme: "http", Host: u.Host, Path: base})
	var names []string
	for _, c := range cookies {
		names = append(names, c.Name+"="+c.Value)
	}
	if slices.Contains(names, "drydock_jupyter=forged") || !slices.Contains(names, "_xsrf=x") {
		t.Errorf("cookies after the proxy: %v", names)
	}
	// The browser's cookies reach Jupyter without the orchestrator's own.
	resp, data = get(base+"api/contents", "")
	json.Unmarshal(data, &seen)
	if resp.StatusCode != 200 || strings.Contains(seen.Cookie, "drydock") || !strings.Contains(seen.Cookie, "_xsrf=x") {
		t.Errorf("cookies forwarded: %d %q", resp.StatusCode, seen.Cookie)
	}
	// A POST with a body passes as it is.
	req, _ := http.NewRequest("POST", b.url+base+"api/sessions", strings.NewReader(`{"kernel":{}}`))
	req.Header.Set("Authorization", "Bearer "+b.alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&seen)
	resp.Body.Close()
	if resp.StatusCode != 200 || seen.Body != `{"kernel":{}}` || seen.Auth != "Bearer tb-jupyter" {
		t.Errorf("post: %d %+v", resp.StatusCode, seen)
	}
	for _, r := range jup.requests() {
		if strings.Contains(r.Auth+r.Cookie+r.Query, b.alice) || strings.Contains(r.Query, "t=") {
			t.Errorf("the sandbox saw the viewer's credentials: %+v", r)
		}
	}

	// The kernel WebSocket, with Jupyter's subprotocol, through the cookie.
	var cookieHdr []string
	for _, c := range jar.Cookies(&url.URL{Scheme: "http", Host: u.Host, Path: base}) {
		cookieHdr = append(cookieHdr, c.Name+"="+c.Value)
	}
	ws, _, err := websocket.Dial(t.Context(), "ws://"+u.Host+base+"api/kernels/k1/channels", &websocket.DialOptions{
		Subprotocols: []string{"v1.kernel.websocket.jupyter.org"}, HTTPHeader: http.Header{"Cookie": {strings.Join(cookieHdr, "; ")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if ws.Subprotocol() != "v1.kernel.websocket.jupyter.org" {
		t.Errorf("subprotocol %q", ws.Subprotocol())
	}
	ws.Write(t.Context(), websocket.MessageText, []byte("hello"))
	if _, msg, err := ws.Read(t.Context()); err != nil || string(msg) != "echo:hello" {
		t.Fatalf("echo: %q %v", msg, err)
	}
	// The job ends: the proxied WebSocket closes.
	b.finish(t, j.ID, drydock.StatusComplete, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	if _, _, err := ws.Read(ctx); err == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("websocket still open after the job ended: %v", err)
	}
	// And the job's Jupyter is gone for new requests.
	if resp, _ := get(base, ""); resp.StatusCode != 409 {
		t.Errorf("after the end: %d", resp.StatusCode)
	}
}

func TestJupyterProxyAccess(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	jup := startJupyterStandIn(t)
	j := b.runningJob(t, b.alice, `{"task": "x"}`, jup.sandbox("sb-jacc"))
	base := "/jobs/" + j.ID + "/jupyter/"
	for _, c := range []struct {
		token string
		want  int
	}{{"", 401}, {b.bob, 404}, {b.alice, 200}, {b.admin, 200}} {
		if resp, data := b.get(t, base+"api", c.token); resp.StatusCode != c.want {
			t.Errorf("token %q: %d %s, want %d", c.token, resp.StatusCode, data, c.want)
		}
	}
	// A forged session cookie is refused.
	req, _ := http.NewRequest("GET", b.url+base+"api", nil)
	req.AddCookie(&http.Cookie{Name: "drydock_jupyter", Value: "forged.cookie"})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("forged cookie: %d", resp.StatusCode)
	}
}

func TestJupyterProxyWithoutToolboxSupport(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	jup := startJupyterStandIn(t)
	jup.noRoute = true
	j := b.runningJob(t, b.alice, `{"task": "x"}`, jup.sandbox("sb-noroute"))
	resp, data := b.get(t, "/jobs/"+j.ID+"/jupyter/api", b.alice)
	if resp.StatusCode != 501 || errorCode(t, data) != drydock.ENOTIMPLEMENTED {
		t.Errorf("no jupyter in toolboxd: %d %s", resp.StatusCode, data)
	}
}
