package desktop

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// xconn is the smallest X11 client that readiness needs: the connection
// setup (which proves the server answers and tells the root window and its
// size) and two requests to see whether a window manager has announced
// itself. Speaking the protocol directly saves spawning xdpyinfo or xprop on
// every probe, and toolboxd cannot link Xlib.
type xconn struct {
	c      net.Conn
	root   uint32
	width  int
	height int
	seq    uint16
}

// xSocket is where an X server for a local display listens.
func xSocket(display int) string { return fmt.Sprintf("/tmp/.X11-unix/X%d", display) }

func dialX(ctx context.Context, display int) (*xconn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", xSocket(display))
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	} else {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	}
	x := &xconn{c: c}
	if err := x.setup(); err != nil {
		c.Close()
		return nil, err
	}
	return x, nil
}

func (x *xconn) Close() error { return x.c.Close() }

func (x *xconn) setup() error {
	// 'l': little-endian, protocol 11.0, no authorization: Xvfb started
	// without -auth accepts local clients of the same machine.
	req := []byte{'l', 0, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if _, err := x.c.Write(req); err != nil {
		return fmt.Errorf("x11 setup: %w", err)
	}
	head := make([]byte, 8)
	if _, err := io.ReadFull(x.c, head); err != nil {
		return fmt.Errorf("x11 setup reply: %w", err)
	}
	body := make([]byte, int(binary.LittleEndian.Uint16(head[6:8]))*4)
	if _, err := io.ReadFull(x.c, body); err != nil {
		return fmt.Errorf("x11 setup reply: %w", err)
	}
	if head[0] != 1 {
		n := min(int(head[1]), len(body))
		return fmt.Errorf("x11 setup refused: %q", body[:n])
	}
	// Offsets below are into the additional data, which starts 8 bytes into
	// the reply.
	if len(body) < 32 {
		return errors.New("x11 setup reply too short")
	}
	vendorLen := int(binary.LittleEndian.Uint16(body[16:18]))
	nFormats := int(body[21])
	screen := 32 + pad4(vendorLen) + 8*nFormats
	if len(body) < screen+24 {
		return errors.New("x11 setup reply has no screen")
	}
	x.root = binary.LittleEndian.Uint32(body[screen:])
	x.width = int(binary.LittleEndian.Uint16(body[screen+20:]))
	x.height = int(binary.LittleEndian.Uint16(body[screen+22:]))
	return nil
}

// internAtom returns the atom for name, or 0 if it does not exist yet.
func (x *xconn) internAtom(name string) (uint32, error) {
	n := len(name)
	req := make([]byte, 8+pad4(n))
	req[0] = 16 // InternAtom
	req[1] = 1  // only-if-exists
	binary.LittleEndian.PutUint16(req[2:], uint16(len(req)/4))
	binary.LittleEndian.PutUint16(req[4:], uint16(n))
	copy(req[8:], name)
	reply, err := x.roundTrip(req)
	if err != nil {
		return 0, fmt.Errorf("intern atom %s: %w", name, err)
	}
	return binary.LittleEndian.Uint32(reply[8:12]), nil
}

// windowProperty returns the first 32-bit item of a property of window, and
// whether the property is set.
func (x *xconn) windowProperty(window, atom uint32) (uint32, bool, error) {
	req := make([]byte, 24)
	req[0] = 20 // GetProperty
	binary.LittleEndian.PutUint16(req[2:], 6)
	binary.LittleEndian.PutUint32(req[4:], window)
	binary.LittleEndian.PutUint32(req[8:], atom)
	binary.LittleEndian.PutUint32(req[12:], 0) // AnyPropertyType
	binary.LittleEndian.PutUint32(req[16:], 0) // offset
	binary.LittleEndian.PutUint32(req[20:], 1) // one 32-bit unit
	reply, err := x.roundTrip(req)
	if err != nil {
		return 0, false, fmt.Errorf("get property: %w", err)
	}
	format, items := reply[1], binary.LittleEndian.Uint32(reply[16:20])
	if format != 32 || items == 0 || len(reply) < 36 {
		return 0, false, nil
	}
	return binary.LittleEndian.Uint32(reply[32:36]), true, nil
}

// windowManagerRunning reports whether an EWMH window manager has set
// _NET_SUPPORTING_WM_CHECK on the root window, which fluxbox and openbox do
// once they manage the screen.
func (x *xconn) windowManagerRunning() (bool, error) {
	atom, err := x.internAtom("_NET_SUPPORTING_WM_CHECK")
	if err != nil || atom == 0 {
		return false, err
	}
	_, ok, err := x.windowProperty(x.root, atom)
	return ok, err
}

// roundTrip sends one request and returns its 32-byte-or-longer reply,
// skipping events (none are selected, but the server may still send some).
func (x *xconn) roundTrip(req []byte) ([]byte, error) {
	if _, err := x.c.Write(req); err != nil {
		return nil, err
	}
	x.seq++
	for {
		head := make([]byte, 32)
		if _, err := io.ReadFull(x.c, head); err != nil {
			return nil, err
		}
		switch head[0] {
		case 0:
			return nil, fmt.Errorf("x11 error code %d", head[1])
		case 1:
			extra := binary.LittleEndian.Uint32(head[4:8])
			if extra > 1<<20 {
				return nil, errors.New("x11 reply too long")
			}
			reply := make([]byte, 32+int(extra)*4)
			copy(reply, head)
			if _, err := io.ReadFull(x.c, reply[32:]); err != nil {
				return nil, err
			}
			if binary.LittleEndian.Uint16(head[2:4]) != x.seq {
				continue
			}
			return reply, nil
		}
	}
}

func pad4(n int) int { return (n + 3) &^ 3 }
