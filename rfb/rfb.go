// Package rfb holds the parts of the RFB protocol (RFC 6143, the VNC
// protocol) that the desktop bridge needs: the handshake that
// authenticates to the sandbox's VNC server with its password and offers
// the viewer no authentication, and the filter that lets a viewer's input
// through only while it holds control. It speaks over plain readers and
// writers; the API carries it over WebSockets.
package rfb

import (
	"bufio"
	"bytes"
	"crypto/des"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"time"
)

// HandshakeTimeout bounds the handshake on both sides of a bridge.
const HandshakeTimeout = 15 * time.Second

// Error is a handshake or protocol failure whose message may be shown to
// the viewer.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// Handshake negotiates RFB with the VNC server (VNC authentication with
// password, or none), then with the viewer (RFB 3.8, no authentication),
// and forwards the viewer's ClientInit with the shared flag set, so that one
// viewer can never disconnect the others.
func Handshake(cr *bufio.Reader, cw io.Writer, sr *bufio.Reader, sw io.Writer, password string) error {
	var ver [12]byte
	if _, err := io.ReadFull(sr, ver[:]); err != nil {
		return fmt.Errorf("read server version: %w", err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(string(ver[:]), "RFB %03d.%03d\n", &major, &minor); err != nil || major != 3 {
		return &Error{"the desktop does not speak RFB 3"}
	}
	switch {
	case minor >= 8:
		minor = 8
	case minor == 7:
	default:
		minor = 3
	}
	if _, err := fmt.Fprintf(sw, "RFB 003.%03d\n", minor); err != nil {
		return err
	}
	if err := serverSecurity(sr, sw, minor, password); err != nil {
		return err
	}

	if _, err := io.WriteString(cw, "RFB 003.008\n"); err != nil {
		return err
	}
	if _, err := io.ReadFull(cr, ver[:]); err != nil {
		return fmt.Errorf("read viewer version: %w", err)
	}
	var cmajor, cminor int
	if _, err := fmt.Sscanf(string(ver[:]), "RFB %03d.%03d\n", &cmajor, &cminor); err != nil || cmajor != 3 {
		return &Error{"the viewer does not speak RFB 3"}
	}
	switch {
	case cminor >= 7:
		// One security type: None.
		if _, err := cw.Write([]byte{1, 1}); err != nil {
			return err
		}
		choice, err := cr.ReadByte()
		if err != nil {
			return fmt.Errorf("read viewer security choice: %w", err)
		}
		if choice != 1 {
			return &Error{"the viewer chose a security type that was not offered"}
		}
		if cminor >= 8 {
			if _, err := cw.Write([]byte{0, 0, 0, 0}); err != nil {
				return err
			}
		}
	default:
		if _, err := cw.Write([]byte{0, 0, 0, 1}); err != nil {
			return err
		}
	}
	if _, err := cr.ReadByte(); err != nil { // ClientInit: the shared flag
		return fmt.Errorf("read viewer init: %w", err)
	}
	_, err := sw.Write([]byte{1})
	return err
}

// serverSecurity authenticates to the VNC server.
func serverSecurity(sr *bufio.Reader, sw io.Writer, minor int, password string) error {
	var chosen byte
	if minor >= 7 {
		n, err := sr.ReadByte()
		if err != nil {
			return fmt.Errorf("read security types: %w", err)
		}
		if n == 0 {
			return &Error{"the desktop refused the connection: " + readReason(sr)}
		}
		types := make([]byte, n)
		if _, err := io.ReadFull(sr, types); err != nil {
			return fmt.Errorf("read security types: %w", err)
		}
		switch {
		case bytes.IndexByte(types, 2) >= 0 && password != "":
			chosen = 2
		case bytes.IndexByte(types, 1) >= 0:
			chosen = 1
		case bytes.IndexByte(types, 2) >= 0:
			return &Error{"the desktop asks for a VNC password, but none is recorded for this sandbox"}
		default:
			return &Error{fmt.Sprintf("the desktop offers no supported security type (%v)", types)}
		}
		if _, err := sw.Write([]byte{chosen}); err != nil {
			return err
		}
	} else {
		var t [4]byte
		if _, err := io.ReadFull(sr, t[:]); err != nil {
			return fmt.Errorf("read security type: %w", err)
		}
		switch binary.BigEndian.Uint32(t[:]) {
		case 0:
			return &Error{"the desktop refused the connection: " + readReason(sr)}
		case 1:
			chosen = 1
		case 2:
			chosen = 2
		default:
			return &Error{"the desktop asks for an unsupported security type"}
		}
	}
	if chosen == 2 {
		var challenge [16]byte
		if _, err := io.ReadFull(sr, challenge[:]); err != nil {
			return fmt.Errorf("read vnc challenge: %w", err)
		}
		if _, err := sw.Write(vncAuthResponse(password, challenge[:])); err != nil {
			return err
		}
	}
	if chosen == 2 || minor >= 8 {
		var res [4]byte
		if _, err := io.ReadFull(sr, res[:]); err != nil {
			return fmt.Errorf("read security result: %w", err)
		}
		if binary.BigEndian.Uint32(res[:]) != 0 {
			if minor >= 8 {
				readReason(sr)
			}
			return &Error{"the desktop refused the sandbox's VNC password"}
		}
	}
	return nil
}

func readReason(r *bufio.Reader) string {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return "no reason given"
	}
	msg := make([]byte, min(binary.BigEndian.Uint32(n[:]), 1024))
	if _, err := io.ReadFull(r, msg); err != nil {
		return "no reason given"
	}
	return string(msg)
}

// vncAuthResponse is classic VNC authentication: the challenge encrypted
// with DES keyed by the password's first 8 bytes, each byte bit-reversed.
// DES is what the protocol defines; the channel itself is the WebSocket.
func vncAuthResponse(password string, challenge []byte) []byte {
	key := make([]byte, 8)
	copy(key, password)
	for i, b := range key {
		key[i] = bits.Reverse8(b)
	}
	c, _ := des.NewCipher(key) // 8-byte key: cannot fail
	out := make([]byte, 16)
	c.Encrypt(out[:8], challenge[:8])
	c.Encrypt(out[8:], challenge[8:16])
	return out
}

// Client-to-server RFB message types (RFC 6143 and the registered
// extensions noVNC sends).
const (
	msgSetPixelFormat   = 0
	msgSetEncodings     = 2
	msgUpdateRequest    = 3
	msgKeyEvent         = 4
	msgPointerEvent     = 5
	msgClientCutText    = 6
	msgContinuousUpdate = 150
	msgClientFence      = 248
	msgXvp              = 250
	msgSetDesktopSize   = 251
	msgGII              = 253
	msgQEMU             = 255
)

// FilterInput forwards the viewer's messages that only ask for pictures
// (pixel format, encodings, update requests, fences), and those that act on
// the desktop (keys, pointer, clipboard, resizing, power (xvp), QEMU key
// events and GII input) only while input() says the viewer holds control:
// a view-only viewer's (input nil), and a controller's whose lease ended,
// are dropped. An unknown type ends the connection, since its length, and
// so the next message, cannot be known.
func FilterInput(dst io.Writer, src *bufio.Reader, input func() bool) error {
	allowed := func() bool { return input != nil && input() }
	msg := make([]byte, 0, 512)
	read := func(n int) error {
		start := len(msg)
		msg = append(msg, make([]byte, n)...)
		_, err := io.ReadFull(src, msg[start:])
		return err
	}
	for {
		t, err := src.ReadByte()
		if err != nil {
			return err
		}
		msg = append(msg[:0], t)
		forward := false
		switch t {
		case msgSetPixelFormat:
			err, forward = read(19), true
		case msgSetEncodings:
			if err = read(3); err == nil {
				err, forward = read(4*int(binary.BigEndian.Uint16(msg[2:4]))), true
			}
		case msgUpdateRequest:
			err, forward = read(9), true
		case msgContinuousUpdate:
			err, forward = read(9), true
		case msgClientFence:
			if err = read(8); err == nil {
				err, forward = read(int(msg[8])), true
			}
		case msgKeyEvent:
			err, forward = read(7), allowed()
		case msgPointerEvent:
			err, forward = read(5), allowed()
		case msgClientCutText:
			if err = read(7); err == nil {
				n := int32(binary.BigEndian.Uint32(msg[4:8]))
				if n < 0 { // extended clipboard: the length is negated
					n = -n
				}
				if forward = allowed(); forward {
					// The text is the viewer's clipboard, sent on as it
					// comes rather than held whole.
					if _, err = dst.Write(msg); err == nil {
						_, err = io.CopyN(dst, src, int64(n))
					}
					forward = false
				} else {
					_, err = io.CopyN(io.Discard, src, int64(n))
				}
			}
		case msgXvp:
			err, forward = read(3), allowed()
		case msgSetDesktopSize:
			if err = read(6); err == nil {
				err, forward = read(16*int(msg[5])), allowed()
			}
		case msgQEMU:
			if err = read(1); err == nil {
				switch msg[1] {
				case 0: // extended key event
					err, forward = read(10), allowed()
				case 1: // audio: operation, and a format for operation 2
					if err = read(2); err == nil && binary.BigEndian.Uint16(msg[2:4]) == 2 {
						err = read(6)
					}
					forward = err == nil && allowed()
				default:
					return &Error{fmt.Sprintf("unknown QEMU message %d from the viewer", msg[1])}
				}
			}
		case msgGII:
			if err = read(3); err == nil {
				order := binary.ByteOrder(binary.LittleEndian)
				if msg[1]&0x80 != 0 {
					order = binary.BigEndian
				}
				n := int64(order.Uint16(msg[2:4]))
				if allowed() {
					if _, err = dst.Write(msg); err == nil {
						_, err = io.CopyN(dst, src, n)
					}
				} else {
					_, err = io.CopyN(io.Discard, src, n)
				}
			}
		default:
			return &Error{fmt.Sprintf("unknown message type %d from the viewer", t)}
		}
		if err != nil {
			return err
		}
		if forward {
			if _, err := dst.Write(msg); err != nil {
				return err
			}
		}
	}
}
