package egress

import (
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// The socket's directory is the sandbox's: a sandbox that swaps the socket
// for a link to a host file, at any moment while the proxy listens again
// (an orchestrator restart), must not get that file's mode changed, nor
// the file removed or replaced.
func TestListenNeverFollowsALinkPlantedAtTheSocket(t *testing.T) {
	t.Parallel()
	sandboxDir, hostDir := t.TempDir(), t.TempDir()
	hostFile := filepath.Join(hostDir, "shadow")
	if err := os.WriteFile(hostFile, []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sandboxDir, "egress.sock")

	// Before the listener: a link where the socket goes is refused.
	for name, target := range map[string]string{"a host file": hostFile, "a host directory": hostDir} {
		os.Remove(path)
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		if c, err := New(Config{}).Listen("job-1", path); err == nil {
			c.Close()
			t.Errorf("Listen over a link to %s succeeded", name)
		}
	}
	os.Remove(path)

	// While the listener starts: the sandbox keeps swapping the name for a
	// link to the host file (rename is atomic, so the socket Listen just
	// bound can be replaced between bind and chmod).
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		link := filepath.Join(sandboxDir, "link")
		for i := 0; !stop.Load() && i < 20_000_000; i++ {
			fi, err := os.Lstat(path)
			if err != nil {
				continue
			}
			if fi.Mode()&os.ModeSocket == 0 {
				// Out of Listen's way, so that it binds again.
				os.Remove(path)
				continue
			}
			os.Remove(link)
			if os.Symlink(hostFile, link) == nil {
				os.Rename(link, path)
			}
		}
	}()
	p := New(Config{})
	listened := 0
	for i := 0; i < 3000; i++ {
		c, err := p.Listen("job-1", path)
		if err == nil {
			listened++
			c.Close()
		}
	}
	stop.Store(true)
	<-done
	t.Logf("%d of 3000 listens succeeded against the swapping sandbox", listened)
	fi, err := os.Stat(hostFile)
	if err != nil {
		t.Fatalf("host file: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the host file's mode became %v through the sandbox's link; want 0600", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(hostFile); string(b) != "host secret" {
		t.Errorf("the host file now holds %q", b)
	}
	// The listener still works once the sandbox stops.
	os.Remove(path)
	c, err := p.Listen("job-1", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("socket not served: %v", err)
	}
	conn.Close()
}
