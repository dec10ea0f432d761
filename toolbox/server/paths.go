package server

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/drydockhq/drydock"
)

// workspace confines every file operation to one directory. Paths are first
// checked lexically (no "..", absolute paths only inside the root), then every
// operation goes through an os.Root, which refuses symbolic links that lead
// out of the root at any component, at the moment of use.
type workspace struct {
	dir   string   // as configured
	bases []string // absolute spellings of dir an absolute path may start with

	mu   sync.Mutex
	root *os.Root
}

func newWorkspace(dir string) *workspace {
	return &workspace{dir: dir, bases: workspacePaths(dir)}
}

// open returns the root, opening it on first use so that a workspace that
// appears after the server starts (a volume mounted late) is picked up.
func (w *workspace) open() (*os.Root, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.root != nil {
		return w.root, nil
	}
	r, err := os.OpenRoot(w.dir)
	if err != nil {
		return nil, drydock.Errorf(drydock.EUNAVAILABLE, "workspace %s cannot be opened: %s", w.dir, errText(err))
	}
	w.root = r
	w.bases = workspacePaths(w.dir)
	return r, nil
}

func (w *workspace) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.root != nil {
		w.root.Close()
		w.root = nil
	}
}

// rel turns a caller's path into a clean path relative to the root, or an
// EFORBIDDEN error if it points outside. "" and "." name the root itself.
func (w *workspace) rel(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", drydock.Errorf(drydock.EINVALID, "path contains a NUL byte")
	}
	if p == "" {
		return ".", nil
	}
	if filepath.IsAbs(p) {
		w.mu.Lock()
		bases := w.bases
		w.mu.Unlock()
		c := filepath.Clean(p)
		for _, base := range bases {
			if c == base {
				return ".", nil
			}
			if strings.HasPrefix(c, base+string(filepath.Separator)) {
				return c[len(base)+1:], nil
			}
		}
		return "", drydock.Errorf(drydock.EFORBIDDEN, "path %q is outside the workspace %s", p, w.dir)
	}
	c := filepath.Clean(p)
	if c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
		return "", drydock.Errorf(drydock.EFORBIDDEN, "path %q leads out of the workspace", p)
	}
	return c, nil
}

// abs is the path as processes in the sandbox see it.
func (w *workspace) abs(rel string) string {
	return filepath.Join(w.dir, rel)
}

// slash is a relative path as the API reports it.
func slash(rel string) string { return filepath.ToSlash(rel) }

// fsError turns an error of a file operation into a coded error that names
// the caller's path but nothing else of the machine.
func fsError(p string, err error) error {
	if err == nil {
		return nil
	}
	var de *drydock.Error
	if errors.As(err, &de) {
		return err
	}
	switch {
	case isEscape(err):
		return drydock.Errorf(drydock.EFORBIDDEN, "path %q leads out of the workspace (through a symbolic link)", p)
	case errors.Is(err, fs.ErrNotExist):
		return drydock.Errorf(drydock.ENOTFOUND, "%s: no such file or directory", p)
	case errors.Is(err, fs.ErrExist):
		return drydock.Errorf(drydock.ECONFLICT, "%s already exists", p)
	case errors.Is(err, fs.ErrPermission):
		return drydock.Errorf(drydock.EFORBIDDEN, "%s: permission denied", p)
	case errors.Is(err, syscall.ENOTDIR):
		return drydock.Errorf(drydock.EINVALID, "%s: a component of the path is not a directory", p)
	case errors.Is(err, syscall.EISDIR):
		return drydock.Errorf(drydock.EINVALID, "%s is a directory", p)
	case errors.Is(err, syscall.ENOTEMPTY):
		return drydock.Errorf(drydock.ECONFLICT, "%s: directory is not empty", p)
	case errors.Is(err, syscall.ELOOP):
		return drydock.Errorf(drydock.EINVALID, "%s: too many levels of symbolic links", p)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return drydock.Errorf(drydock.ETOOLARGE, "%s: no space left in the workspace", p)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return drydock.Errorf(drydock.EINVALID, "%s: file name too long", p)
	case errors.Is(err, syscall.EXDEV):
		return drydock.Errorf(drydock.EINVALID, "%s: cannot move across file systems", p)
	case errors.Is(err, syscall.EINVAL):
		return drydock.Errorf(drydock.EINVALID, "%s: invalid operation", p)
	}
	return fmt.Errorf("%s: %w", p, err)
}

// isEscape recognises os.Root's refusal to leave the root, which may be
// wrapped in several *fs.PathError layers. The standard library does not
// export the error value, so its text is what we match.
func isEscape(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}

// errText is an error's message without the path prefixes the os package
// adds, for messages about the workspace itself.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
