package secretbox

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"strings"
)

// Mask is the byte that replaces each byte of a secret value.
const Mask = '*'

// matcher finds secret values in bytes.
type matcher struct {
	values  [][]byte
	longest int
}

func newMatcher(values []string) *matcher {
	m := &matcher{}
	for _, v := range values {
		if v == "" {
			continue
		}
		m.values = append(m.values, []byte(v))
		m.longest = max(m.longest, len(v))
	}
	return m
}

// mark sets marks[i] for every byte of b inside an occurrence of a value.
// It finds every occurrence, overlapping ones included, in the original
// bytes, so that masking one cannot hide part of another from the search.
func (m *matcher) mark(b []byte, marks []bool) {
	for _, v := range m.values {
		for off := 0; off+len(v) <= len(b); {
			i := bytes.Index(b[off:], v)
			if i < 0 {
				break
			}
			start := off + i
			for j := start; j < start+len(v); j++ {
				marks[j] = true
			}
			off = start + 1
		}
	}
}

// MaskString returns s with every occurrence of each value replaced by as
// many Mask bytes as it has.
func MaskString(s string, values []string) string {
	// Most texts hold no value: answer those without copying them.
	found := false
	for _, v := range values {
		if v != "" && strings.Contains(s, v) {
			found = true
			break
		}
	}
	if !found {
		return s
	}
	m := newMatcher(values)
	if m.longest == 0 || len(s) == 0 {
		return s
	}
	b := []byte(s)
	marks := make([]bool, len(b))
	m.mark(b, marks)
	changed := false
	for i, x := range marks {
		if x {
			b[i], changed = Mask, true
		}
	}
	if !changed {
		return s
	}
	return string(b)
}

// chunk is how much a Reader reads from its source at a time.
const chunk = 32 << 10

// reader is the streaming replacer behind NewReader.
type reader struct {
	src io.Reader
	m   *matcher
	// buf holds the bytes read but not yet released, as read (not
	// masked), and marks which of them are inside a value. The last
	// longest-1 bytes are held back until more arrive, since a value may
	// continue in the next read.
	buf    []byte
	marks  []bool
	out    []byte // masked bytes ready for Read, in outBuf
	outBuf []byte
	err    error // from src, returned once buf is drained
}

// NewReader returns a reader of src with every occurrence of each value
// replaced by as many Mask bytes as it has, so the length is unchanged.
// It holds at most 32 KiB plus the longest value in memory, and finds
// values split across reads of src.
func NewReader(src io.Reader, values []string) io.Reader {
	m := newMatcher(values)
	if m.longest == 0 {
		return src
	}
	return &reader{src: src, m: m}
}

func (r *reader) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		r.fill()
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// fill reads once from src and releases what can no longer be part of a
// value that continues beyond the bytes read so far.
func (r *reader) fill() {
	if r.buf == nil {
		size := chunk + r.m.longest - 1
		r.buf, r.marks, r.outBuf = make([]byte, 0, size), make([]bool, 0, size), make([]byte, size)
	}
	held := len(r.buf)
	n, err := r.src.Read(r.buf[held:cap(r.buf)])
	r.buf = r.buf[:held+n]
	r.marks = r.marks[:held+n]
	clear(r.marks[held:])
	if err != nil {
		r.err = err
	}
	if n == 0 && err == nil {
		return
	}
	r.m.mark(r.buf, r.marks)
	release := len(r.buf) - (r.m.longest - 1)
	if r.err != nil {
		release = len(r.buf) // nothing more will come
	}
	if release <= 0 {
		return
	}
	out := r.outBuf[:release]
	for i := range out {
		if r.marks[i] {
			out[i] = Mask
		} else {
			out[i] = r.buf[i]
		}
	}
	r.out = out
	r.buf = r.buf[:copy(r.buf, r.buf[release:])]
	r.marks = r.marks[:copy(r.marks, r.marks[release:])]
}

// MaskTar copies the tar stream src to dst with the values masked in every
// entry's contents (same length, so each header's size stays right) and in
// its names and link targets. It reads and writes one entry at a time,
// never the whole archive.
func MaskTar(dst io.Writer, src io.Reader, values []string) error {
	tr := tar.NewReader(src)
	tw := tar.NewWriter(dst)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		hdr.Name = MaskString(hdr.Name, values)
		hdr.Linkname = MaskString(hdr.Linkname, values)
		for k, v := range hdr.PAXRecords {
			hdr.PAXRecords[k] = MaskString(v, values)
		}
		// Name and Linkname carry the path; records that repeat them would
		// contradict the masked fields.
		for _, k := range []string{"path", "linkpath"} {
			delete(hdr.PAXRecords, k)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("write tar entry: %w", err)
		}
		if _, err := io.Copy(tw, NewReader(tr, values)); err != nil {
			return fmt.Errorf("copy tar entry %s: %w", hdr.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("finish tar: %w", err)
	}
	return nil
}
