package server

import (
	"fmt"
	"os"
	"strings"
)

// cmdOutput collects one command's output. The reply shows what has not been
// reported yet, capped to max bytes by keeping its head and tail; the whole
// output is kept in memory while it is at most max bytes and is spilled to a
// file in the workspace beyond that, so memory stays bounded whatever the
// command prints.
type cmdOutput struct {
	max   int
	total int64

	whole     []byte // until spilled
	spill     *os.File
	spillPath string // absolute, as the sandbox sees it
	spillErr  error
	openSpill func() (*os.File, string, error)

	// The unreported segment: its first half-cap bytes, then a ring of the
	// latest bytes.
	head     []byte
	tail     ring
	segTotal int64
}

func newCmdOutput(max int, openSpill func() (*os.File, string, error)) *cmdOutput {
	return &cmdOutput{max: max, openSpill: openSpill, tail: ring{buf: make([]byte, 0, max-max/2)}}
}

func (o *cmdOutput) Write(p []byte) {
	o.total += int64(len(p))
	switch {
	case o.spill != nil:
		o.writeSpill(p)
	case o.spillErr != nil:
	case o.total <= int64(o.max):
		o.whole = append(o.whole, p...)
	default:
		f, path, err := o.openSpill()
		if err != nil {
			o.spillErr, o.whole = err, nil
			break
		}
		o.spill, o.spillPath = f, path
		o.writeSpill(o.whole)
		o.whole = nil
		o.writeSpill(p)
	}
	o.segTotal += int64(len(p))
	if room := o.max/2 - len(o.head); room > 0 {
		n := min(room, len(p))
		o.head = append(o.head, p[:n]...)
		p = p[n:]
	}
	o.tail.Write(p)
}

func (o *cmdOutput) writeSpill(p []byte) {
	if _, err := o.spill.Write(p); err != nil {
		o.spillErr = err
		o.spill.Close()
		o.spill = nil
	}
}

// take returns the unreported output and whether it had to be cut, and
// starts a new segment.
func (o *cmdOutput) take() (string, bool) {
	var b strings.Builder
	b.Write(o.head)
	cut := o.segTotal - int64(len(o.head)) - int64(o.tail.Len())
	if cut > 0 {
		switch {
		case o.spillPath != "" && o.spillErr == nil:
			fmt.Fprintf(&b, "\n\n[... %d bytes omitted; the whole output is in %s ...]\n\n", cut, o.spillPath)
		case o.spillErr != nil:
			fmt.Fprintf(&b, "\n\n[... %d bytes omitted; the whole output could not be saved: %s ...]\n\n", cut, errText(o.spillErr))
		default:
			fmt.Fprintf(&b, "\n\n[... %d bytes omitted ...]\n\n", cut)
		}
	}
	o.tail.WriteTo(&b)
	o.head, o.segTotal = o.head[:0], 0
	o.tail.Reset()
	return b.String(), cut > 0
}

// path is the file holding the whole output, if it was spilled.
func (o *cmdOutput) path() string {
	if o.spillErr != nil {
		return ""
	}
	return o.spillPath
}

func (o *cmdOutput) close() {
	if o.spill != nil {
		o.spill.Close()
		o.spill = nil
	}
}

// ring keeps the last cap(buf) bytes written to it.
type ring struct {
	buf   []byte
	start int // index of the oldest byte once full
}

func (r *ring) Len() int { return len(r.buf) }

func (r *ring) Write(p []byte) {
	c := cap(r.buf)
	if c == 0 || len(p) == 0 {
		return
	}
	if len(p) >= c {
		r.buf = append(r.buf[:0], p[len(p)-c:]...)
		r.start = 0
		return
	}
	if room := c - len(r.buf); room > 0 {
		n := min(room, len(p))
		r.buf = append(r.buf, p[:n]...)
		p = p[n:]
	}
	for len(p) > 0 {
		n := copy(r.buf[r.start:], p)
		p = p[n:]
		r.start = (r.start + n) % c
	}
}

func (r *ring) WriteTo(b *strings.Builder) {
	b.Write(r.buf[r.start:])
	b.Write(r.buf[:r.start])
}

func (r *ring) Bytes() []byte {
	out := make([]byte, 0, len(r.buf))
	out = append(out, r.buf[r.start:]...)
	return append(out, r.buf[:r.start]...)
}

func (r *ring) Reset() {
	r.buf = r.buf[:0]
	r.start = 0
}
