package desktop

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/drydockhq/drydock/toolbox"
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
		if d.Ready()[toolbox.ComponentVNC] && d.Restarts()[toolbox.ComponentVNC] > 0 {
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

// An x11vnc that does not exit on SIGTERM (x11vnc cleans up in its signal
// handler, and one that lands inside Xlib can hang it there) is killed, and
// the new password still takes over. Not parallel: PATH names the stand-in.
func TestSetVNCPasswordKillsAnX11vncThatIgnoresSIGTERM(t *testing.T) {
	RequireDesktop(t)
	real, err := exec.LookPath("x11vnc")
	if err != nil {
		t.Skip("x11vnc is not installed")
	}
	// The real x11vnc dies on SIGTERM; its parent, the process x11vnc's
	// group is led by, ignores it and stays, as a hung x11vnc would.
	bin := t.TempDir()
	script := "#!/bin/sh\ntrap '' TERM\n" + real + " \"$@\"\nexec sleep 600\n"
	if err := os.WriteFile(filepath.Join(bin, "x11vnc"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	d := setup(t, func(c *Config) { c.VNCPassword = "pool-pw1" })
	if err := d.SetVNCPassword("job-pw-2"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !d.Ready()[toolbox.ComponentVNC] || d.Restarts()[toolbox.ComponentVNC] == 0 || vncHandshake(t, dialBridge(t, d), "job-pw-2") != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the new VNC password is not accepted after 30 s (restarts %v)", d.Restarts())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
