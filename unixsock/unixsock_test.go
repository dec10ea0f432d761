package unixsock

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// host is what a sandbox must not touch through its directory: a file, a
// directory and a listening socket of the host's, each outside the
// sandbox's directory.
type host struct {
	file, dir, sock string
	accepted        *atomic.Int32
}

func setup(t *testing.T) (sandboxDir string, h host) {
	t.Helper()
	sandboxDir, hostDir := t.TempDir(), t.TempDir()
	h = host{file: filepath.Join(hostDir, "shadow"), dir: filepath.Join(hostDir, "etc"), sock: filepath.Join(hostDir, "engine.sock"), accepted: new(atomic.Int32)}
	if err := os.WriteFile(h.file, []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(h.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", h.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.accepted.Add(1)
			c.Close()
		}
	}()
	return sandboxDir, h
}

// untouched fails the test if anything of the host's changed.
func (h host) untouched(t *testing.T) {
	t.Helper()
	for path, want := range map[string]fs.FileMode{h.file: 0o600, h.dir: 0o700 | fs.ModeDir} {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Errorf("host %s: %v", path, err)
			continue
		}
		if fi.Mode() != want {
			t.Errorf("host %s is now %v, want %v", path, fi.Mode(), want)
		}
	}
	if b, _ := os.ReadFile(h.file); string(b) != "host secret" {
		t.Errorf("host file holds %q", b)
	}
	if fi, err := os.Lstat(h.sock); err != nil || fi.Mode().Type() != fs.ModeSocket {
		t.Errorf("host socket: %v %v", fi, err)
	}
	if n := h.accepted.Load(); n != 0 {
		t.Errorf("the host's socket was connected to %d times", n)
	}
}

func TestListenRefusesWhatIsNotASocket(t *testing.T) {
	t.Parallel()
	dir, h := setup(t)
	path := filepath.Join(dir, "egress.sock")
	plant := map[string]func() error{
		"a link to a host file":      func() error { return os.Symlink(h.file, path) },
		"a link to a host directory": func() error { return os.Symlink(h.dir, path) },
		"a link to a host socket":    func() error { return os.Symlink(h.sock, path) },
		"a dangling link":            func() error { return os.Symlink(filepath.Join(h.dir, "new"), path) },
		"a directory":                func() error { return os.Mkdir(path, 0o777) },
		"a regular file":             func() error { return os.WriteFile(path, []byte("x"), 0o666) },
		"a hard link to a host file": func() error { return os.Link(h.file, path) },
		"a named pipe":               func() error { return mkfifo(path) },
	}
	for what, make := range plant {
		os.RemoveAll(path)
		if err := make(); err != nil {
			t.Logf("%s: cannot plant (%v)", what, err)
			continue
		}
		ln, err := Listen(path, 0o666)
		if err == nil {
			ln.Close()
			t.Errorf("Listen over %s succeeded", what)
		} else if !errors.Is(err, ErrNotSocket) {
			t.Errorf("Listen over %s: %v, want ErrNotSocket", what, err)
		}
	}
	os.RemoveAll(path)
	h.untouched(t)
	if _, err := os.Stat(filepath.Join(h.dir, "new")); err == nil {
		t.Error("Listen created a socket through a dangling link")
	}
}

// The race of the issue: the sandbox swaps the socket Listen just bound for
// a link to a host file before Listen sets its mode.
func TestListenSetsTheModeOfItsOwnSocketOnly(t *testing.T) {
	dir, h := setup(t)
	path := filepath.Join(dir, "egress.sock")
	afterBind = func(p string) {
		os.Remove(p)
		if err := os.Symlink(h.file, p); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { afterBind = nil })
	ln, err := Listen(path, 0o666)
	if err == nil {
		ln.Close()
		t.Error("Listen succeeded though its socket was swapped for a link")
	} else if !errors.Is(err, ErrNotSocket) {
		t.Errorf("Listen: %v, want ErrNotSocket", err)
	}
	h.untouched(t)
}

func TestListenReplacesAStaleSocketAndSetsItsMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "toolboxd.sock")
	old, err := Listen(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	ln, err := Listen(path, 0o666)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	defer ln.Close()
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o666 {
		t.Fatalf("socket: %v %v; want a socket, mode 0666", fi, err)
	}
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := Dial(t.Context(), path)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	c.Close()
	Remove(path, fi)
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove left the socket: %v", err)
	}
}

// A sandbox that replaces the socket the host dials with a link to another
// socket (the engine's, another sandbox's toolboxd) gets no connection
// made to it.
func TestDialRefusesALink(t *testing.T) {
	t.Parallel()
	dir, h := setup(t)
	path := filepath.Join(dir, "toolboxd.sock")
	for what, target := range map[string]string{"a host socket": h.sock, "a host file": h.file, "a host directory": h.dir} {
		os.Remove(path)
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		c, err := Dial(t.Context(), path)
		if err == nil {
			c.Close()
			t.Errorf("Dial through a link to %s connected", what)
		} else if !errors.Is(err, ErrNotSocket) {
			t.Errorf("Dial through a link to %s: %v, want ErrNotSocket", what, err)
		}
	}
	h.untouched(t)
}
