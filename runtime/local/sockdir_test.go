package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The short socket directory lives in the shared temporary directory under
// a name anyone can compute from the root. If another user made it first
// (a link to their own directory, or a directory they can write), the
// runtime must refuse it rather than put sockets, and so the tokens it
// sends, where they can swap them.
func TestSocketDirMustBeThisUsersAlone(t *testing.T) {
	t.Parallel()
	attacker := shortDir(t)
	os.Chmod(attacker, 0o777)
	for name, plant := range map[string]func(dir string) error{
		"a link to another's directory": func(dir string) error { return os.Symlink(attacker, dir) },
		"a world-writable directory":    func(dir string) error { return os.Mkdir(dir, 0o777) },
		"a file":                        func(dir string) error { return os.WriteFile(dir, nil, 0o600) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sockDir := filepath.Join(shortDir(t), "socks")
			if err := plant(sockDir); err != nil {
				t.Fatal(err)
			}
			os.Chmod(sockDir, 0o777) // umask aside; a no-op through the link's target already 0777
			rt := newRuntime(t, Options{Root: t.TempDir(), SocketDir: sockDir})
			sb, err := rt.Create(t.Context(), spec())
			if err == nil {
				rt.Destroy(t.Context(), sb.ID)
				t.Fatalf("Create with %s as the socket directory succeeded", name)
			}
			if !strings.Contains(err.Error(), "socket directory") {
				t.Errorf("Create: %v; want it to name the socket directory", err)
			}
			if entries, _ := os.ReadDir(attacker); len(entries) != 0 {
				t.Errorf("a socket landed in the other user's directory: %v", entries)
			}
		})
	}
}

// A link planted where a sandbox's socket goes is never followed: Create
// fails and the link's target is untouched.
func TestSocketLinkIsNotFollowed(t *testing.T) {
	t.Parallel()
	hostFile := filepath.Join(t.TempDir(), "host-file")
	if err := os.WriteFile(hostFile, []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	sockDir := filepath.Join(shortDir(t), "socks")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, Options{Root: t.TempDir(), SocketDir: sockDir})
	sb, err := rt.Create(t.Context(), spec())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Destroy(t.Context(), sb.ID)
	// The process that served it dies; something puts a link where its
	// socket was; a new runtime serves the sandbox again.
	rt.Close()
	os.Remove(sb.Endpoint.Address)
	if err := os.Symlink(hostFile, sb.Endpoint.Address); err != nil {
		t.Fatal(err)
	}
	rt2 := newRuntime(t, Options{Root: rt.root, SocketDir: sockDir})
	if _, err := rt2.Get(t.Context(), sb.ID); err == nil {
		t.Error("Get served the sandbox over a link")
	}
	fi, err := os.Stat(hostFile)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("host file: %v %v; want it untouched (0644)", fi, err)
	}
	os.Remove(sb.Endpoint.Address)
}

// shortDir is a temporary directory with a short path: socket paths must
// fit in 108 bytes.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ddl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
