package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/drydockhq/drydock"
)

// The socket directory. toolboxd (uid 1000 in the sandbox, some other uid
// on the host under rootless Podman) must create its socket there and
// remove its boot secrets file, so the directory starts world-writable. Once
// toolboxd listens, Create seals it: mode 0755, owned by the orchestrator's
// user, so the sandbox can still connect to the sockets in it but never
// create, rename, replace or fill anything there. Before the seal only the
// image's own toolboxd runs in the sandbox (no job's command has started);
// the seal then checks that nothing but toolboxd's socket is left.

// socketDir is the host side of the sandbox's /run/toolbox.
func socketDir(dir string) string { return filepath.Join(dir, "toolbox") }

// sealedMode is the socket directory's mode once sealed: the sandbox may
// traverse it (to connect) and list it, nothing more.
const sealedMode = 0o755

// listenTimeout bounds the wait for toolboxd's socket after the container
// starts. toolboxd listens within milliseconds of starting; the bound is
// for an image whose toolboxd hangs.
const listenTimeout = 2 * time.Minute

// sealPoll is how often the wait looks for the socket; the container's
// state is asked every sealInspectEvery polls.
const (
	sealPoll         = 10 * time.Millisecond
	sealInspectEvery = 50
)

// sealSocketDir waits until toolboxd listens in the sandbox's socket
// directory, then seals it (see above) and checks what it holds.
func (r *Runtime) sealSocketDir(ctx context.Context, id, dir string) error {
	sockDir := socketDir(dir)
	fd, err := unix.Open(sockDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open socket dir: %w", err)
	}
	defer unix.Close(fd)
	if err := r.waitListening(ctx, id, fd); err != nil {
		return err
	}
	if err := sealDir(fd); err != nil {
		return err
	}
	// toolboxd removes the file before it listens; an image whose daemon
	// does not is no reason to leave the secrets to the sandbox's processes.
	if err := unix.Unlinkat(fd, bootSecretsFile, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove boot secrets: %w", err)
	}
	return checkSealed(fd)
}

// waitListening polls for toolboxd's socket, and fails early when the
// container stops (with the end of its log, which says why).
func (r *Runtime) waitListening(ctx context.Context, id string, dirfd int) error {
	ctx, cancel := context.WithTimeout(ctx, listenTimeout)
	defer cancel()
	for i := 1; ; i++ {
		var st unix.Stat_t
		err := unix.Fstatat(dirfd, toolboxSocket, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK {
			return nil
		}
		if i%sealInspectEvery == 0 {
			res, err := r.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
			if err == nil && res.Container.State != nil && !res.Container.State.Running {
				return drydock.Errorf(drydock.EUNAVAILABLE, "toolboxd exited (%s, exit code %d) before it listened: %s",
					res.Container.State.Status, res.Container.State.ExitCode, r.logTail(ctx, id))
			}
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return drydock.Errorf(drydock.EUNAVAILABLE, "toolboxd did not listen within %s: %s", listenTimeout, r.logTail(context.WithoutCancel(ctx), id))
			}
			return ctx.Err()
		case <-time.After(sealPoll):
		}
	}
}

// logTail is the end of a container's log, for an error message.
func (r *Runtime) logTail(ctx context.Context, id string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rc, err := r.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: "5"})
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer rc.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, io.LimitReader(rc, 4<<10)); err != nil && out.Len() == 0 {
		return "(no log: " + err.Error() + ")"
	}
	if s := strings.TrimSpace(out.String()); s != "" {
		return s
	}
	return "(empty log)"
}

// sealDir makes the directory behind fd the orchestrator's, mode 0755, and
// checks that it took: a seal that silently failed (a rootless setup that
// maps the owner away) must not pass for one.
func sealDir(fd int) error {
	if err := unix.Fchown(fd, os.Geteuid(), os.Getegid()); err != nil {
		return fmt.Errorf("seal socket dir: chown: %w", err)
	}
	if err := unix.Fchmod(fd, sealedMode); err != nil {
		return fmt.Errorf("seal socket dir: chmod: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("seal socket dir: %w", err)
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o7777 != sealedMode {
		return fmt.Errorf("seal socket dir: it is uid %d mode %o after the seal, want uid %d mode %o", st.Uid, st.Mode&0o7777, os.Geteuid(), sealedMode)
	}
	return nil
}

// checkSealed refuses a sealed directory that holds anything but
// toolboxd's socket (and the egress proxy's, which the host makes): a file
// the sandbox made before the seal may still be open for writing in it.
func checkSealed(fd int) error {
	dup, err := unix.Dup(fd)
	if err != nil {
		return fmt.Errorf("check socket dir: %w", err)
	}
	f := os.NewFile(uintptr(dup), "socket dir")
	defer f.Close()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("check socket dir: %w", err)
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("check socket dir: %w", err)
	}
	var extra []string
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // gone meanwhile
		}
		if (name == toolboxSocket || name == egressSocket) && st.Mode&unix.S_IFMT == unix.S_IFSOCK {
			continue
		}
		extra = append(extra, name)
	}
	if len(extra) > 0 {
		return fmt.Errorf("the sandbox left %q in its socket directory before it was sealed (is its image's toolboxd Drydock's?)", extra)
	}
	return nil
}
