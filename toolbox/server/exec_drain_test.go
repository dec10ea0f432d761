package server

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// The end of a command's output is not lost when the caller reads slowly:
// once the command has ended its pipes get a read deadline (children that
// outlive it may hold them open), but a deadline that passes while the
// reader waits for the caller must not drop what the pipe still holds.
func TestExecOutputSurvivesASlowCaller(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("0123456789abcdef"), 3<<10) // 48 KiB: fits in the pipe
	if _, err := w.Write(want); err != nil {
		t.Fatal(err)
	}
	w.Close() // the command ended
	r.SetReadDeadline(time.Now().Add(drainAfterEnd))
	var got []byte
	readPipe(r, func(b []byte) {
		if len(got) == 0 {
			// The caller takes longer than the deadline over the
			// first frame.
			time.Sleep(2 * drainAfterEnd)
		}
		got = append(got, b...)
	})
	r.Close()
	if !bytes.Equal(got, want) {
		t.Fatalf("%d bytes of %d arrived", len(got), len(want))
	}
}
