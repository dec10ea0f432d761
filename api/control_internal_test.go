package api

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/coder/websocket"
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
		err := filterInput(&out, bufio.NewReader(bytes.NewReader(in)), tc.input)
		if err == nil || err.Error() != "EOF" {
			t.Fatalf("%s: %v; want EOF at the end", tc.name, err)
		}
		if !bytes.Equal(out.Bytes(), tc.want) {
			t.Errorf("%s: forwarded %v; want %v", tc.name, out.Bytes(), tc.want)
		}
	}
}

// A connection whose control was ended elsewhere closes normally, saying
// why, within the 123 bytes a close reason may hold.
func TestCloseReasonOfEndedControl(t *testing.T) {
	for _, msg := range []string{"the pause lasted longer than --pause-max", strings.Repeat("é", 200)} {
		code, reason := closeReason(fmt.Errorf("bridge: %w", errControlEnded{msg}), nil)
		if code != websocket.StatusNormalClosure || !strings.HasPrefix(reason, "desktop control ended: ") || len(reason) > 123 || !utf8.ValidString(reason) {
			t.Errorf("closeReason = %d %q (%d bytes)", code, reason, len(reason))
		}
	}
}
