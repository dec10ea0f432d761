package api

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/coder/websocket"
)

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
