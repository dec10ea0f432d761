package unixsock

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"strconv"

	"golang.org/x/sys/unix"
)

// openSocket opens path without following a link at its last element
// (O_PATH reaches a socket, which open(2) otherwise cannot) and checks that
// what it found is a socket. The descriptor names that inode for good, so
// what is done through /proc/self/fd/N reaches it whatever happens to the
// name meanwhile.
func openSocket(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", base(path), err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("stat %s: %w", base(path), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		unix.Close(fd)
		return -1, fmt.Errorf("%s is %s: %w", base(path), describe(modeOf(st.Mode)), ErrNotSocket)
	}
	return fd, nil
}

func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// chmodSocket sets the mode of the socket inode at path. fchmod on an
// O_PATH descriptor is refused, but chmod through its /proc/self/fd link
// reaches exactly that inode.
func chmodSocket(path string, perm fs.FileMode) error {
	fd, err := openSocket(path)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Chmod(fdPath(fd), uint32(perm.Perm())); err != nil {
		return fmt.Errorf("chmod %s: %w", base(path), err)
	}
	return nil
}

func dial(ctx context.Context, d *net.Dialer, path string) (net.Conn, error) {
	fd, err := openSocket(path)
	if err != nil {
		return nil, fmt.Errorf("dial unix %s: %w", path, err)
	}
	defer unix.Close(fd)
	c, err := d.DialContext(ctx, "unix", fdPath(fd))
	if err != nil {
		return nil, fmt.Errorf("dial unix %s: %w", path, err)
	}
	return c, nil
}

func modeOf(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFREG:
		return 0
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}
