package secretbox_test

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/drydockhq/drydock/secretbox"
)

// naive is the reference: mask every occurrence, overlapping ones too, in
// one piece of memory.
func naive(s string, values []string) string {
	b := []byte(s)
	marks := make([]bool, len(b))
	for _, v := range values {
		if v == "" {
			continue
		}
		for i := 0; i+len(v) <= len(s); i++ {
			if s[i:i+len(v)] == v {
				for j := i; j < i+len(v); j++ {
					marks[j] = true
				}
			}
		}
	}
	for i, m := range marks {
		if m {
			b[i] = '*'
		}
	}
	return string(b)
}

func TestMaskString(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"x " + canary + " y", "x " + strings.Repeat("*", len(canary)) + " y"},
		{canary + canary, strings.Repeat("*", 2*len(canary))},
		{"nothing here", "nothing here"},
		// Overlapping occurrences are both masked.
		{"abcabcab", "********"},
	}
	for _, tt := range tests {
		if got := secretbox.MaskString(tt.in, []string{canary, "abcab"}); got != tt.want {
			t.Errorf("MaskString(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func readAllWith(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReaderValueSplitAcrossReads(t *testing.T) {
	t.Parallel()
	values := []string{canary, "short-one", "abcab"}
	in := "head " + canary + " mid short-one " + canary + "abcabcab tail" + canary
	want := naive(in, values)
	// Every split point of the input, and one byte at a time.
	for cut := range len(in) + 1 {
		r := io.MultiReader(strings.NewReader(in[:cut]), strings.NewReader(in[cut:]))
		if got := readAllWith(t, secretbox.NewReader(r, values)); got != want {
			t.Fatalf("cut at %d: got %q; want %q", cut, got, want)
		}
	}
	if got := readAllWith(t, secretbox.NewReader(iotest.OneByteReader(strings.NewReader(in)), values)); got != want {
		t.Fatalf("one byte at a time: got %q", got)
	}
	if got := readAllWith(t, iotest.OneByteReader(secretbox.NewReader(strings.NewReader(in), values))); got != want {
		t.Fatalf("read one byte at a time: got %q", got)
	}
	if got := readAllWith(t, secretbox.NewReader(iotest.DataErrReader(strings.NewReader(in)), values)); got != want {
		t.Fatalf("data with EOF: got %q", got)
	}
}

func TestReaderLargeStream(t *testing.T) {
	t.Parallel()
	// Values across the 32 KiB chunk boundary, in a stream bigger than
	// what the reader keeps in memory.
	var b strings.Builder
	for b.Len() < 300<<10 {
		b.WriteString(strings.Repeat("x", 32<<10-7))
		b.WriteString(canary)
	}
	in := b.String()
	got := readAllWith(t, secretbox.NewReader(strings.NewReader(in), []string{canary}))
	if len(got) != len(in) || strings.Contains(got, canary) || got != naive(in, []string{canary}) {
		t.Fatal("large stream not masked as expected")
	}
}

func TestReaderPassesErrors(t *testing.T) {
	t.Parallel()
	r := secretbox.NewReader(iotest.TimeoutReader(strings.NewReader(strings.Repeat("a", 100))), []string{canary})
	_, err := io.ReadAll(r)
	if err != iotest.ErrTimeout {
		t.Fatalf("err = %v; want the source's", err)
	}
	if err := iotest.TestReader(secretbox.NewReader(strings.NewReader("abc "+canary), []string{canary}), []byte("abc "+strings.Repeat("*", len(canary)))); err != nil {
		t.Fatal(err)
	}
}

func FuzzReader(f *testing.F) {
	f.Add("abcabcab", "abcab", "bca", uint8(3))
	f.Add("x"+canary+"y", canary, "zzzzzzzz", uint8(7))
	f.Add("aaaaaaaaaa", "aaa", "aa", uint8(1))
	f.Fuzz(func(t *testing.T, in, v1, v2 string, step uint8) {
		values := []string{v1, v2}
		want := naive(in, values)
		n := int(step%16) + 1
		r := secretbox.NewReader(iotest.HalfReader(&stepReader{s: in, n: n}), values)
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("NewReader(%q, %q) in steps of %d = %q; want %q", in, values, n, got, want)
		}
		if s := secretbox.MaskString(in, values); s != want {
			t.Fatalf("MaskString = %q; want %q", s, want)
		}
	})
}

// stepReader returns at most n bytes per Read.
type stepReader struct {
	s string
	n int
}

func (r *stepReader) Read(p []byte) (int, error) {
	if len(r.s) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.s)
	r.s = r.s[k:]
	return k, nil
}

func TestMaskTar(t *testing.T) {
	t.Parallel()
	var src bytes.Buffer
	tw := tar.NewWriter(&src)
	files := []struct {
		hdr  tar.Header
		body string
	}{
		{tar.Header{Name: "dir/", Typeflag: tar.TypeDir, Mode: 0o755}, ""},
		{tar.Header{Name: "dir/a.txt", Mode: 0o644}, "token=" + canary + "\n"},
		{tar.Header{Name: "dir/" + canary + ".txt", Mode: 0o644}, "named after it"},
		{tar.Header{Name: "dir/link", Typeflag: tar.TypeSymlink, Linkname: "../" + canary}, ""},
		{tar.Header{Name: "dir/" + strings.Repeat("long/", 30) + canary, Mode: 0o644}, strings.Repeat("y", 70000) + canary},
	}
	for _, f := range files {
		h := f.hdr
		h.Size = int64(len(f.body))
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.body))
	}
	tw.Close()

	var out bytes.Buffer
	if err := secretbox.MaskTar(&out, bytes.NewReader(src.Bytes()), []string{canary}); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out.Bytes(), []byte(canary)) {
		t.Fatal("the masked archive contains the value")
	}
	tr := tar.NewReader(&out)
	for i, f := range files {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if want := naive(f.hdr.Name, []string{canary}); hdr.Name != want {
			t.Errorf("name %q; want %q", hdr.Name, want)
		}
		if want := naive(f.body, []string{canary}); string(body) != want {
			t.Errorf("%s: body not masked as expected", hdr.Name)
		}
		if hdr.Linkname != naive(f.hdr.Linkname, []string{canary}) {
			t.Errorf("link %q", hdr.Linkname)
		}
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Fatalf("after the last entry: %v", err)
	}
	if err := secretbox.MaskTar(io.Discard, strings.NewReader("not a tar at all, but long enough to be read as a header block"+strings.Repeat("x", 600)), []string{canary}); err == nil {
		t.Fatal("a broken tar stream was copied without an error")
	}
}

// BenchmarkReader masks a 4 MiB stream with the largest allowed number of
// values (32), the cost the archive of a job with secrets pays.
func BenchmarkReader(b *testing.B) {
	var values []string
	for i := range 32 {
		values = append(values, canary+strings.Repeat("v", i))
	}
	in := []byte(strings.Repeat("some ordinary output of a build, line after line\n", (4<<20)/50))
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := io.Copy(io.Discard, secretbox.NewReader(bytes.NewReader(in), values)); err != nil {
			b.Fatal(err)
		}
	}
}
