package api_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/des"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
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
	"github.com/drydockhq/drydock/desktop"
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
	// colours, when not nil, collects the distinct pixels of frames.
	colours map[uint32]bool
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
		if v.colours != nil && rect[11] == 0 && rect[8]|rect[9]|rect[10] == 0 { // raw
			for i := 0; i+4 <= n; i += 4 * 7 {
				v.colours[binary.LittleEndian.Uint32(v.buf[i:])&0xffffff] = true
			}
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

// Live links can point at another origin of the same server; the UI's own
// origin may still open the desktop there, and no other.
func TestDesktopOnLiveOrigin(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, func(c *api.Config) {
		c.PublicURL, c.LiveURL = "http://ui.test", "http://live.test:1234/"
	})
	vnc := &fakeVNC{w: 8, h: 8}
	_, l := desktopJob(t, b, vnc, "sb-liveorigin", false)
	if !strings.HasPrefix(l.URL, "http://live.test:1234/jobs/") || !strings.HasPrefix(l.WebSocketURL, "ws://live.test:1234/jobs/") {
		t.Fatalf("link %+v", l)
	}
	resp, _ := b.get(t, "/", "")
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self' ws://live.test:1234 http://live.test:1234;") {
		t.Errorf("the UI may not connect to the live origin: %q", csp)
	}
	ws := "ws" + strings.TrimPrefix(b.url, "http") + strings.TrimPrefix(l.WebSocketURL, "ws://live.test:1234")
	dial := func(origin string) error {
		c, _, err := websocket.Dial(t.Context(), ws, &websocket.DialOptions{Host: "live.test:1234", Subprotocols: []string{"binary"},
			HTTPHeader: http.Header{"Origin": {origin}}})
		if err == nil {
			c.CloseNow()
		}
		return err
	}
	if err := dial("http://ui.test"); err != nil {
		t.Errorf("from the UI's origin: %v", err)
	}
	if err := dial("http://evil.test"); err == nil {
		t.Error("a foreign origin opened the desktop on the live origin")
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
	vnc.mu.Lock()
	defer vnc.mu.Unlock()
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

// realDesktop puts package desktop (Xvfb, fluxbox, x11vnc) behind toolboxd's
// VNC route, as the sandbox image does.
type realDesktop struct{ d *desktop.Desktop }

func (r realDesktop) Components(context.Context) []toolbox.Component {
	var cs []toolbox.Component
	for name, ok := range r.d.Ready() {
		cs = append(cs, toolbox.Component{Name: name, Ready: ok})
	}
	return cs
}

func (r realDesktop) Screenshot(context.Context) (*toolbox.Screenshot, error) {
	return nil, drydock.Errorf(drydock.ENOTIMPLEMENTED, "not used here")
}

func (r realDesktop) Do(context.Context, toolbox.DesktopAction) (*toolbox.DesktopResult, error) {
	return nil, drydock.Errorf(drydock.ENOTIMPLEMENTED, "not used here")
}

func (r realDesktop) ServeVNC(w http.ResponseWriter, req *http.Request) {
	r.d.VNCHandler().ServeHTTP(w, req)
}

// The proxy against a real x11vnc with a password: the viewer sees the
// screen, and its pointer moves the real cursor only with control.
func TestDesktopProxyRealX11VNC(t *testing.T) {
	t.Parallel()
	for _, bin := range []string{"Xvfb", "x11vnc", "fluxbox", "xdotool"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed (scripts/testenv/sandbox-tools.sh installs the desktop tools)", bin)
		}
	}
	display := 0
	for range 100 {
		n := 300 + mrand.IntN(20000)
		_, errLock := os.Stat(fmt.Sprintf("/tmp/.X%d-lock", n))
		_, errSock := os.Stat(fmt.Sprintf("/tmp/.X11-unix/X%d", n))
		if os.IsNotExist(errLock) && os.IsNotExist(errSock) {
			display = n
			break
		}
	}
	sockDir, err := os.MkdirTemp("", "ddvnc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	const password = "s3cretpw"
	d := desktop.New(desktop.Config{Display: display, Width: 640, Height: 400, VNCPassword: password,
		VNCSocket: filepath.Join(sockDir, "vnc.sock"), RuntimeDir: t.TempDir(), Env: []string{"HOME=" + t.TempDir()}}, nil)
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := d.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}

	b := setupLive(t, false, nil)
	sb := startToolbox(t, "sb-x11", t.TempDir(), realDesktop{d})
	sb.VNCPassword = password
	j := b.runningJob(t, b.alice, `{"task": "x", "profile": "desktop"}`, sb)
	for i, control := range []bool{false, true} {
		v, err := dialViewer(t.Context(), b.link(t, b.alice, j.ID, "desktop", control).WebSocketURL, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		if v.w != 640 || v.h != 400 {
			t.Errorf("screen %dx%d", v.w, v.h)
		}
		v.colours = map[uint32]bool{}
		if err := v.frame(); err != nil {
			t.Fatal(err)
		}
		if len(v.colours) < 2 {
			t.Errorf("control=%v: the frame has %d colours: blank", control, len(v.colours))
		}
		x, y := 100+i*50, 77+i*20
		pointer := []byte{5, 0}
		pointer = binary.BigEndian.AppendUint16(pointer, uint16(x))
		pointer = binary.BigEndian.AppendUint16(pointer, uint16(y))
		v.nc.Write(pointer)
		v.frame() // a round trip: the server has handled the pointer by now
		res, err := d.Do(ctx, desktop.Action{Action: desktop.ActionCursorPosition})
		if err != nil {
			t.Fatal(err)
		}
		moved := res.Cursor.X == x && res.Cursor.Y == y
		if moved != control {
			t.Errorf("control=%v: the cursor is at %v after the viewer pointed at %d,%d", control, *res.Cursor, x, y)
		}
		v.close()
	}
}
