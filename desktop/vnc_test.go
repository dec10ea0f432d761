package desktop

import (
	"bytes"
	"context"
	"crypto/des"
	"encoding/binary"
	"io"
	"math/bits"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// dialBridge connects a WebSocket client to the VNC bridge the way noVNC
// does, and returns the RFB byte stream.
func dialBridge(t *testing.T, d *Desktop) net.Conn {
	t.Helper()
	srv := httptest.NewServer(d.VNCHandler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), &websocket.DialOptions{
		Subprotocols: []string{"binary"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if ws.Subprotocol() != "binary" {
		t.Errorf("subprotocol %q, want binary", ws.Subprotocol())
	}
	c := websocket.NetConn(ctx, ws, websocket.MessageBinary)
	t.Cleanup(func() { c.Close() })
	return c
}

func readN(t *testing.T, r io.Reader, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	return b
}

// vncHandshake runs the RFB 3.8 handshake up to the security result and
// returns that result (0 = OK).
func vncHandshake(t *testing.T, c net.Conn, password string) uint32 {
	t.Helper()
	if banner := string(readN(t, c, 12)); banner != "RFB 003.008\n" {
		t.Fatalf("banner %q, want RFB 003.008", banner)
	}
	if _, err := c.Write([]byte("RFB 003.008\n")); err != nil {
		t.Fatal(err)
	}
	types := readN(t, c, int(readN(t, c, 1)[0]))
	want := byte(1) // None
	if password != "" {
		want = 2 // VNC authentication
	}
	if !bytes.Contains(types, []byte{want}) || (password != "" && bytes.Contains(types, []byte{1})) {
		t.Fatalf("security types %v, want %d and not None when a password is set", types, want)
	}
	if _, err := c.Write([]byte{want}); err != nil {
		t.Fatal(err)
	}
	if password != "" {
		challenge := readN(t, c, 16)
		if _, err := c.Write(vncResponse(password, challenge)); err != nil {
			t.Fatal(err)
		}
	}
	return binary.BigEndian.Uint32(readN(t, c, 4))
}

// vncResponse encrypts the challenge with DES keyed by the password, whose
// bytes VNC uses bit-reversed.
func vncResponse(password string, challenge []byte) []byte {
	key := make([]byte, 8)
	copy(key, password)
	for i := range key {
		key[i] = bits.Reverse8(key[i])
	}
	block, err := des.NewCipher(key)
	if err != nil {
		panic(err)
	}
	out := make([]byte, 16)
	block.Encrypt(out[:8], challenge[:8])
	block.Encrypt(out[8:], challenge[8:])
	return out
}

func TestVNCBridgeCarriesRFB(t *testing.T) {
	t.Parallel()
	d := setup(t, func(c *Config) { c.VNCPassword = "s3cret-pw" })

	c := dialBridge(t, d)
	if res := vncHandshake(t, c, "s3cret-pw"); res != 0 {
		t.Fatalf("security result %d with the right password", res)
	}
	// ClientInit (shared) answered by ServerInit with the screen size.
	if _, err := c.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	init := readN(t, c, 24)
	if w, h := binary.BigEndian.Uint16(init[0:]), binary.BigEndian.Uint16(init[2:]); w != 1280 || h != 800 {
		t.Errorf("server init says %dx%d, want 1280x800", w, h)
	}

	wrong := dialBridge(t, d)
	if res := vncHandshake(t, wrong, "guessing"); res == 0 {
		t.Error("a wrong password was accepted")
	}
}

func TestVNCOnTCPWithoutPassword(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	d := setup(t, func(c *Config) { c.VNCSocket, c.VNCPort = "", port })

	c := dialBridge(t, d)
	if res := vncHandshake(t, c, ""); res != 0 {
		t.Fatalf("security result %d without a password", res)
	}
	// The bridge ends when the client leaves, and so does the connection to
	// x11vnc: Close waits for open bridges, so a leak would hang cleanup.
	c.Close()

	// When x11vnc goes away, the client sees a normal close, not a hang.
	c = dialBridge(t, d)
	readN(t, c, 12)
	if err := syscall.Kill(d.vnc.pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("bridge did not close cleanly when x11vnc died: %v", err)
	}
}

func TestVNCBridgeRefusesWhenNotRunning(t *testing.T) {
	t.Parallel()
	d := New(Config{Display: 9, RuntimeDir: t.TempDir()}, nil)
	rec := httptest.NewRecorder()
	d.VNCHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503", rec.Code)
	}
}

// A viewer that comes while x11vnc is still starting is refused, and that
// refusal does not keep Close waiting for a bridge that never ran.
func TestVNCBridgeRefusedWhileStartingLetsCloseFinish(t *testing.T) {
	t.Parallel()
	RequireDesktop(t)
	d := New(testConfig(t), testLogger(t))
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	// x11vnc starts only once Xvfb and the window manager answer: not yet.
	rec := httptest.NewRecorder()
	d.VNCHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d while starting, want 503", rec.Code)
	}
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close still waits 30 s after a refused viewer")
	}
}
