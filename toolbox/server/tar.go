package server

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

func (s *Server) handleUploadTar(w http.ResponseWriter, r *http.Request) {
	res, err := s.uploadTar(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// uploadTar unpacks a tar (or gzip-compressed tar) stream into a directory.
// Every entry's name, and every hard link's target, is confined like any
// other path; symbolic links are created as they are, since the file API
// never follows one out of the workspace.
func (s *Server) uploadTar(r *http.Request) (*toolbox.TarResult, error) {
	p := r.URL.Query().Get("path")
	root, dir, err := s.resolve(p)
	if err != nil {
		return nil, err
	}
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return nil, fsError(p, err)
	}
	br := bufio.NewReaderSize(r.Body, 64<<10)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, drydock.Errorf(drydock.EINVALID, "body is not a valid gzip stream")
		}
		defer zr.Close()
		src = zr
	}
	tr := tar.NewReader(src)
	res := &toolbox.TarResult{}
	type dirMode struct {
		rel  string
		mode fs.FileMode
		hdr  *tar.Header
	}
	var dirModes []dirMode
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, drydock.Errorf(drydock.EINVALID, "invalid tar stream after %d entries: %s", res.Files+res.Dirs+res.Links, err)
		}
		name := hdr.Name
		if path.IsAbs(name) {
			return nil, drydock.Errorf(drydock.EFORBIDDEN, "tar entry %q has an absolute path", name)
		}
		target, err := s.ws.rel(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || (dir != "." && !within(dir, target)) {
			return nil, drydock.Errorf(drydock.EFORBIDDEN, "tar entry %q leads out of %s", name, p)
		}
		perm := fs.FileMode(hdr.Mode) & fs.ModePerm
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(target, 0o755); err != nil {
				return nil, fsError(name, err)
			}
			if target != dir {
				dirModes = append(dirModes, dirMode{target, perm, hdr})
			}
			res.Dirs++
		case tar.TypeReg, tar.TypeRegA:
			n, err := extractFile(root, target, perm, tr)
			if err != nil {
				return nil, fsError(name, err)
			}
			root.Chtimes(target, hdr.AccessTime, hdr.ModTime)
			res.Files++
			res.Bytes += n
		case tar.TypeSymlink:
			if err := replaceable(root, target); err != nil {
				return nil, fsError(name, err)
			}
			if err := root.Symlink(hdr.Linkname, target); err != nil {
				return nil, fsError(name, err)
			}
			res.Links++
		case tar.TypeLink:
			old, err := s.ws.rel(filepath.Join(dir, filepath.FromSlash(hdr.Linkname)))
			if err != nil || (dir != "." && !within(dir, old)) {
				return nil, drydock.Errorf(drydock.EFORBIDDEN, "tar hard link %q -> %q leads out of %s", name, hdr.Linkname, p)
			}
			if err := replaceable(root, target); err != nil {
				return nil, fsError(name, err)
			}
			if err := root.Link(old, target); err != nil {
				return nil, fsError(name, err)
			}
			res.Links++
		default:
			// Devices and fifos have no place in a workspace.
			res.Skipped++
		}
	}
	// Directory modes last: a read-only directory must not stop its own
	// contents from being written.
	for i := len(dirModes) - 1; i >= 0; i-- {
		d := dirModes[i]
		root.Chmod(d.rel, d.mode)
		root.Chtimes(d.rel, d.hdr.AccessTime, d.hdr.ModTime)
	}
	return res, nil
}

// within reports whether rel lies in dir (both clean and relative).
func within(dir, rel string) bool {
	return rel == dir || strings.HasPrefix(rel, dir+string(filepath.Separator))
}

// replaceable removes what stands at target unless it is a directory, so that
// a tar entry replaces a file or link rather than writing through it.
func replaceable(root *os.Root, target string) error {
	if dir := filepath.Dir(target); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	fi, err := root.Lstat(target)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return &fs.PathError{Op: "extract", Path: target, Err: fs.ErrExist}
	}
	return root.Remove(target)
}

func extractFile(root *os.Root, target string, perm fs.FileMode, r io.Reader) (int64, error) {
	if err := replaceable(root, target); err != nil {
		return 0, err
	}
	f, err := root.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, r)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

func (s *Server) handleDownloadTar(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := q.Get("path")
	root, rel, err := s.resolve(p)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	var excludes []string
	for _, e := range q["exclude"] {
		if c := path.Clean(strings.TrimPrefix(e, "./")); c != "." && c != "" {
			excludes = append(excludes, c)
		}
	}
	fi, err := root.Stat(rel)
	if err != nil {
		writeError(w, r, s.log, fsError(p, err))
		return
	}
	w.Header().Set("Content-Type", "application/x-tar")
	tw := tar.NewWriter(w)
	d := &tarDumper{s: s, root: root, tw: tw, excludes: excludes}
	if fi.IsDir() {
		err = d.dir(rel, "")
	} else {
		err = d.file(rel, filepath.Base(rel))
	}
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		if r.Context().Err() == nil {
			s.log.Warn("tar download cut short", "path", p, "err", err)
		}
		// The status line is out; only a broken stream can tell the caller
		// that the archive is incomplete.
		panic(http.ErrAbortHandler)
	}
}

// tarDumper writes a tree as tar without following symbolic links: a link
// is archived as a link, so nothing outside the workspace gets in.
type tarDumper struct {
	s        *Server
	root     *os.Root
	tw       *tar.Writer
	excludes []string
}

func (d *tarDumper) excluded(name string) bool {
	for _, e := range d.excludes {
		if name == e || strings.HasPrefix(name, e+"/") {
			return true
		}
	}
	return false
}

func (d *tarDumper) dir(rel, prefix string) error {
	f, err := d.root.Open(rel)
	if err != nil {
		return err
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, e := range ents {
		name := path.Join(prefix, e.Name())
		if d.excluded(name) {
			continue
		}
		child := filepath.Join(rel, e.Name())
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed while we walked
		}
		if err != nil {
			return err
		}
		switch m := info.Mode(); {
		case m.IsDir():
			hdr, err := tar.FileInfoHeader(info, "")
			if err != nil {
				return err
			}
			hdr.Name = name + "/"
			clearOwner(hdr)
			if err := d.tw.WriteHeader(hdr); err != nil {
				return err
			}
			if err := d.dir(child, name); err != nil {
				return err
			}
		case m&fs.ModeSymlink != 0:
			target, err := d.root.Readlink(child)
			if err != nil {
				return err
			}
			hdr, err := tar.FileInfoHeader(info, target)
			if err != nil {
				return err
			}
			hdr.Name = name
			clearOwner(hdr)
			if err := d.tw.WriteHeader(hdr); err != nil {
				return err
			}
		case m.IsRegular():
			if err := d.file(child, name); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *tarDumper) file(rel, name string) error {
	f, err := d.root.Open(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	hdr, err := tar.FileInfoHeader(info, "")
	if err != nil {
		return err
	}
	hdr.Name = name
	clearOwner(hdr)
	if err := d.tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.CopyN(d.tw, f, info.Size())
	if errors.Is(err, io.EOF) {
		// The file shrank while we read it. Like GNU tar, pad it to the
		// size in its header so the rest of the archive stays readable.
		d.s.log.Warn("file shrank while archived; padded with zeros", "path", slash(rel), "missing", info.Size()-n)
		_, err = io.CopyN(d.tw, zeros{}, info.Size()-n)
	}
	return err
}

// clearOwner drops the uid and gid of the sandbox user: they mean nothing
// where the archive is unpacked.
func clearOwner(h *tar.Header) {
	h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
