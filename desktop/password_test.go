package desktop

import (
	"testing"
	"time"
)

func TestSetVNCPasswordReplacesThePassword(t *testing.T) {
	t.Parallel()
	d := setup(t, func(c *Config) { c.VNCPassword = "pool-pw1" })
	if err := d.SetVNCPassword("job-pw-2"); err != nil {
		t.Fatal(err)
	}
	// The restart is in the background: the new password works once x11vnc
	// is back, and from then on the old one never does.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if d.Ready()[ComponentVNC] && d.Restarts()[ComponentVNC] > 0 {
			if res := vncHandshake(t, dialBridge(t, d), "job-pw-2"); res == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the new VNC password is not accepted after 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res := vncHandshake(t, dialBridge(t, d), "pool-pw1"); res == 0 {
		t.Error("the old VNC password still works")
	}
	if err := d.SetVNCPassword(""); err == nil {
		t.Error("an empty password was accepted")
	}
}
