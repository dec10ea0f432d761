package api

import (
	"archive/zip"
	"bytes"
	"io"
	"testing"
	"testing/iotest"
)

// countZipRecords finds every central directory record, also one split
// across reads, so that its count bounds what archive/zip will allocate.
func TestCountZipRecords(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range []string{"a", "b/", "b/c"} {
		zw.Create(n)
	}
	zw.Close()
	for name, r := range map[string]io.Reader{"whole": bytes.NewReader(buf.Bytes()), "byte by byte": iotest.OneByteReader(bytes.NewReader(buf.Bytes()))} {
		n, err := countZipRecords(r)
		if err != nil || n != 3 {
			t.Errorf("%s: %d records, %v; want 3", name, n, err)
		}
	}
}
