package toolbox_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// A sandbox can write the directory that holds its toolboxd's socket. If it
// replaces the socket with a link to another socket (the engine's, another
// sandbox's toolboxd), the host must not follow it: the request, which
// carries the sandbox's token, would go to whatever the link names.
func TestClientDoesNotFollowALinkAtTheSocket(t *testing.T) {
	t.Parallel()
	var reached atomic.Int32
	other := serve(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			reached.Add(1)
			h.ServeHTTP(w, r)
		})
	})
	dir := t.TempDir()
	sock := filepath.Join(dir, "toolboxd.sock")
	if err := os.Symlink(other.socket, sock); err != nil {
		t.Fatal(err)
	}
	c := toolbox.New(drydock.Endpoint{Network: "unix", Address: sock}, token)
	defer c.Close()
	_, err := c.Info(t.Context())
	if err == nil {
		t.Fatal("Info through a link to another socket succeeded")
	}
	if !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("Info: %v; want it to say the path is not a socket", err)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the other socket's server got %d requests", n)
	}
	// The socket itself, not a link, still works.
	if _, err := other.client.Info(t.Context()); err != nil {
		t.Errorf("Info on the real socket: %v", err)
	}
}
