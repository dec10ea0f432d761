package rfb

import (
	"bufio"
	"bytes"
	"testing"
)

// A controller's input reaches the desktop only while it holds the lease;
// what only asks for pictures always does.
func TestFilterInputFollowsTheLease(t *testing.T) {
	t.Parallel()
	msgs := [][]byte{
		{4, 1, 0, 0, 0, 0, 0, 'a'},              // key
		{5, 1, 0, 10, 0, 10},                    // pointer
		{6, 0, 0, 0, 0, 0, 0, 3, 'h', 'e', 'y'}, // clipboard
		{3, 0, 0, 0, 0, 0, 0, 8, 0, 8},          // update request
	}
	var in []byte
	for _, m := range msgs {
		in = append(in, m...)
	}
	for _, tc := range []struct {
		name  string
		input func() bool
		want  []byte
	}{
		{"view-only", nil, msgs[3]},
		{"lease lost", func() bool { return false }, msgs[3]},
		{"lease held", func() bool { return true }, in},
	} {
		var out bytes.Buffer
		err := FilterInput(&out, bufio.NewReader(bytes.NewReader(in)), tc.input)
		if err == nil || err.Error() != "EOF" {
			t.Fatalf("%s: %v; want EOF at the end", tc.name, err)
		}
		if !bytes.Equal(out.Bytes(), tc.want) {
			t.Errorf("%s: forwarded %v; want %v", tc.name, out.Bytes(), tc.want)
		}
	}
}
