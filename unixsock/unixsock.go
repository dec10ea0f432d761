package unixsock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
)

// ErrNotSocket is returned when something other than a socket (a link, a
// file, a directory) sits where a socket should be.
var ErrNotSocket = errors.New("not a socket")

// afterBind, when set by a test, runs between bind and chmod: the moment
// a racing sandbox would swap the socket for a link.
var afterBind func(path string)

// Listen opens a listening unix socket at path with the given permission
// bits. A socket already at path (left by a process that died, or by one
// that is being replaced) is removed first; anything else there is an
// error wrapping ErrNotSocket. The listener does not remove the socket
// when it is closed: a newer listener may have taken the name over (see
// Remove).
func Listen(path string, perm fs.FileMode) (*net.UnixListener, error) {
	if err := removeStale(path); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false)
	if afterBind != nil {
		afterBind(path)
	}
	if err := chmodSocket(path, perm); err != nil {
		ln.Close()
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return ln, nil
}

// removeStale removes a socket at path, and only a socket.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listen on %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("listen on %s: %s is there: %w", path, describe(fi.Mode()), ErrNotSocket)
	}
	// Between the check and the unlink the entry may have been swapped:
	// unlink removes whatever is at the name and never follows it, so the
	// worst case is removing something the directory's writer put there.
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	return nil
}

// Remove removes the socket at path if it is still the file a listener
// created (same as fi), and leaves anything that replaced it.
func Remove(path string, fi fs.FileInfo) {
	if now, err := os.Lstat(path); err == nil && os.SameFile(fi, now) {
		os.Remove(path)
	}
}

// Dial connects to the unix socket at path. A link, or anything else that
// is not a socket, at path is refused with an error wrapping ErrNotSocket
// and nothing is connected to.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	return dial(ctx, &d, path)
}

// DialWith is Dial with the dialer's timeout and keep-alive settings.
func DialWith(ctx context.Context, d *net.Dialer, path string) (net.Conn, error) {
	return dial(ctx, d, path)
}

func describe(m fs.FileMode) string {
	switch m.Type() {
	case fs.ModeSymlink:
		return "a symbolic link"
	case fs.ModeDir:
		return "a directory"
	case 0:
		return "a regular file"
	}
	return "a " + m.Type().String() + " file"
}

// base is for messages: the socket's name without the caller's layout.
func base(path string) string { return filepath.Base(path) }
