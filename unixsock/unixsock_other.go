//go:build !linux

package unixsock

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
)

// Elsewhere than Linux there is no O_PATH: the checks below are made by
// name and race with a writer of the directory. Sandboxes run on Linux
// hosts; this keeps the CLI and tests building on other systems.

func chmodSocket(path string, perm fs.FileMode) error {
	if err := checkSocket(path); err != nil {
		return err
	}
	return os.Chmod(path, perm.Perm())
}

func dial(ctx context.Context, d *net.Dialer, path string) (net.Conn, error) {
	if err := checkSocket(path); err != nil {
		return nil, fmt.Errorf("dial unix %s: %w", path, err)
	}
	return d.DialContext(ctx, "unix", path)
}

func checkSocket(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s is %s: %w", base(path), describe(fi.Mode()), ErrNotSocket)
	}
	return nil
}
