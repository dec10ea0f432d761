package server

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// Bounds of listings.
const (
	maxListEntries = 10000
	maxListDepth   = 32
)

// resolve opens the workspace and confines p to it.
func (s *Server) resolve(p string) (*os.Root, string, error) {
	root, err := s.ws.open()
	if err != nil {
		return nil, "", err
	}
	rel, err := s.ws.rel(p)
	if err != nil {
		return nil, "", err
	}
	return root, rel, nil
}

func (s *Server) handleRead(w http.ResponseWriter, r *http.Request) {
	if err := s.read(w, r); err != nil {
		writeError(w, r, s.log, err)
	}
}

func (s *Server) read(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	p := q.Get("path")
	root, rel, err := s.resolve(p)
	if err != nil {
		return err
	}
	start, err := queryInt(q.Get("start_line"), "start_line")
	if err != nil {
		return err
	}
	end, err := queryInt(q.Get("end_line"), "end_line")
	if err != nil {
		return err
	}
	if end > 0 && start > end {
		return drydock.Errorf(drydock.EINVALID, "start_line %d is after end_line %d", start, end)
	}
	f, err := root.Open(rel)
	if err != nil {
		return fsError(p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fsError(p, err)
	}
	if fi.IsDir() {
		return drydock.Errorf(drydock.EINVALID, "%s is a directory; list it instead", p)
	}
	if !fi.Mode().IsRegular() {
		return drydock.Errorf(drydock.EINVALID, "%s is not a regular file", p)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if start == 0 && end == 0 {
		if fi.Size() > s.cfg.MaxReadBytes {
			return drydock.Errorf(drydock.ETOOLARGE, "%s is %d bytes; the limit for one read is %d: read a line range or download it as a tar",
				p, fi.Size(), s.cfg.MaxReadBytes)
		}
		w.Header().Set("Content-Length", strconv.FormatInt(fi.Size(), 10))
		if _, err := io.CopyN(w, f, fi.Size()); err != nil {
			// The status line is out; only a broken stream can tell the
			// caller that the body is short.
			panic(http.ErrAbortHandler)
		}
		return nil
	}
	if start == 0 {
		start = 1
	}
	data, total, err := readLines(f, start, end, s.cfg.MaxReadBytes)
	if err != nil {
		return fsError(p, err)
	}
	if start > total && !(total == 0 && start == 1) {
		return drydock.Errorf(drydock.EINVALID, "start_line %d is past the end of %s (%d lines)", start, p, total)
	}
	w.Header().Set(toolbox.HeaderTotalLines, strconv.Itoa(total))
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.Write(data)
	return nil
}

// readLines returns lines start..end (1-based, inclusive; end 0 means to the
// end) with their newlines, and the number of lines in the whole file.
func readLines(r io.Reader, start, end int, max int64) ([]byte, int, error) {
	var out bytes.Buffer
	buf := make([]byte, 64<<10)
	line := 1
	var last byte
	seen := false
	for {
		n, err := r.Read(buf)
		b := buf[:n]
		if n > 0 {
			seen = true
			last = b[n-1]
		}
		for len(b) > 0 {
			i := bytes.IndexByte(b, '\n')
			seg := b
			if i >= 0 {
				seg, b = b[:i+1], b[i+1:]
			} else {
				b = nil
			}
			if line >= start && (end == 0 || line <= end) {
				if int64(out.Len()+len(seg)) > max {
					return nil, 0, drydock.Errorf(drydock.ETOOLARGE, "the lines asked for are over %d bytes; ask for fewer", max)
				}
				out.Write(seg)
			}
			if i >= 0 {
				line++
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, err
		}
	}
	total := line - 1
	if seen && last != '\n' {
		total++
	}
	return out.Bytes(), total, nil
}

func queryInt(v, name string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, drydock.Errorf(drydock.EINVALID, "%s must be a non-negative integer", name)
	}
	return n, nil
}

// parseMode reads an octal permission such as "644" or "0755".
func parseMode(v string) (fs.FileMode, bool, error) {
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(v, 8, 32)
	if err != nil || n > 0o7777 {
		return 0, false, drydock.Errorf(drydock.EINVALID, "mode must be octal permission bits such as 0644")
	}
	return fs.FileMode(n), true, nil
}

func (s *Server) handleWrite(w http.ResponseWriter, r *http.Request) {
	fi, err := s.write(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, fi)
}

// write replaces the file through a temporary sibling and a rename, so that
// a write cut short (the caller went away) never leaves a half-written file.
// A symbolic link is written through instead, so the link stays a link.
func (s *Server) write(r *http.Request) (*toolbox.FileInfo, error) {
	q := r.URL.Query()
	p := q.Get("path")
	root, rel, err := s.resolve(p)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		return nil, drydock.Errorf(drydock.EINVALID, "path must name a file")
	}
	mode, haveMode, err := parseMode(q.Get("mode"))
	if err != nil {
		return nil, err
	}
	if err := mkdirParents(root, rel, p); err != nil {
		return nil, err
	}
	old, err := root.Lstat(rel)
	switch {
	case err == nil && old.Mode()&fs.ModeSymlink != 0:
		f, err := root.OpenFile(rel, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return nil, fsError(p, err)
		}
		_, err = io.Copy(f, r.Body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fsError(p, err)
		}
		if haveMode {
			if err := root.Chmod(rel, mode); err != nil {
				return nil, fsError(p, err)
			}
		}
		return s.stat(root, rel, p)
	case err == nil && old.IsDir():
		return nil, drydock.Errorf(drydock.EINVALID, "%s is a directory", p)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fsError(p, err)
	}
	if !haveMode {
		mode = 0o644
		if old != nil {
			mode = old.Mode().Perm()
		}
	}
	tmp := filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+".tmp-"+rand.Text()[:10])
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fsError(p, err)
	}
	_, err = io.Copy(f, r.Body)
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		root.Remove(tmp)
		return nil, fsError(p, err)
	}
	return s.stat(root, rel, p)
}

// mkdirParents creates the missing parents of rel.
func mkdirParents(root *os.Root, rel, p string) error {
	dir := filepath.Dir(rel)
	if dir == "." {
		return nil
	}
	err := root.MkdirAll(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return drydock.Errorf(drydock.EINVALID, "%s: a component of the path is not a directory", p)
	}
	return fsError(p, err)
}

func (s *Server) stat(root *os.Root, rel, p string) (*toolbox.FileInfo, error) {
	fi, err := root.Lstat(rel)
	if err != nil {
		return nil, fsError(p, err)
	}
	info := fileInfo(root, rel, fi)
	return &info, nil
}

func fileInfo(root *os.Root, rel string, fi fs.FileInfo) toolbox.FileInfo {
	info := toolbox.FileInfo{
		Name:    fi.Name(),
		Path:    slash(rel),
		Size:    fi.Size(),
		Mode:    uint32(fi.Mode().Perm()),
		ModTime: fi.ModTime().UTC(),
	}
	if rel == "." {
		info.Name = "."
	}
	switch m := fi.Mode(); {
	case m.IsRegular():
		info.Type = toolbox.TypeFile
	case m.IsDir():
		info.Type = toolbox.TypeDir
	case m&fs.ModeSymlink != 0:
		info.Type = toolbox.TypeSymlink
		if t, err := root.Readlink(rel); err == nil {
			info.LinkTarget = t
		}
	default:
		info.Type = toolbox.TypeOther
	}
	return info
}

func (s *Server) handleStat(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get("path")
	root, rel, err := s.resolve(p)
	if err == nil {
		var fi *toolbox.FileInfo
		if fi, err = s.stat(root, rel, p); err == nil {
			writeJSON(w, http.StatusOK, fi)
			return
		}
	}
	writeError(w, r, s.log, err)
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	res, err := s.list(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// list walks down to depth without following symbolic links to directories,
// so that a link cannot make it loop or list a tree twice.
func (s *Server) list(r *http.Request) (*toolbox.ListResult, error) {
	q := r.URL.Query()
	p := q.Get("path")
	root, rel, err := s.resolve(p)
	if err != nil {
		return nil, err
	}
	depth, err := queryInt(q.Get("depth"), "depth")
	if err != nil {
		return nil, err
	}
	if depth == 0 {
		depth = 1
	}
	depth = min(depth, maxListDepth)
	fi, err := root.Stat(rel)
	if err != nil {
		return nil, fsError(p, err)
	}
	if !fi.IsDir() {
		return nil, drydock.Errorf(drydock.EINVALID, "%s is not a directory", p)
	}
	res := &toolbox.ListResult{Entries: []toolbox.FileInfo{}}
	var walk func(dir string, level int) error
	walk = func(dir string, level int) error {
		f, err := root.Open(dir)
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
			if len(res.Entries) >= maxListEntries {
				res.Truncated = true
				return nil
			}
			child := filepath.Join(dir, e.Name())
			info, err := e.Info()
			if err != nil {
				continue // removed while we listed
			}
			res.Entries = append(res.Entries, fileInfo(root, child, info))
			if e.IsDir() && level < depth {
				if err := walk(child, level+1); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(rel, 1); err != nil {
		return nil, fsError(p, err)
	}
	return res, nil
}

func (s *Server) handleMove(w http.ResponseWriter, r *http.Request) {
	var req toolbox.MoveRequest
	if err := decodeJSON(w, r, &req); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	fi, err := s.move(req)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, fi)
}

func (s *Server) move(req toolbox.MoveRequest) (*toolbox.FileInfo, error) {
	if req.From == "" || req.To == "" {
		return nil, drydock.Errorf(drydock.EINVALID, "from and to are required")
	}
	root, from, err := s.resolve(req.From)
	if err != nil {
		return nil, err
	}
	_, to, err := s.resolve(req.To)
	if err != nil {
		return nil, err
	}
	if from == "." || to == "." {
		return nil, drydock.Errorf(drydock.EINVALID, "the workspace root cannot be moved or replaced")
	}
	if _, err := root.Lstat(from); err != nil {
		return nil, fsError(req.From, err)
	}
	if !req.Overwrite {
		if _, err := root.Lstat(to); err == nil {
			return nil, drydock.Errorf(drydock.ECONFLICT, "%s already exists; set overwrite to replace it", req.To)
		}
	}
	if err := mkdirParents(root, to, req.To); err != nil {
		return nil, err
	}
	if err := root.Rename(from, to); err != nil {
		return nil, fsError(req.To, err)
	}
	return s.stat(root, to, req.To)
}

func (s *Server) handleMkdir(w http.ResponseWriter, r *http.Request) {
	var req toolbox.MkdirRequest
	if err := decodeJSON(w, r, &req); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	root, rel, err := s.resolve(req.Path)
	if err == nil {
		mode := fs.FileMode(req.Mode)
		if mode == 0 {
			mode = 0o755
		}
		if mode > 0o7777 {
			err = drydock.Errorf(drydock.EINVALID, "mode must be permission bits such as 0755")
		} else if err = root.MkdirAll(rel, mode); err != nil {
			err = fsError(req.Path, err)
		}
	}
	if err == nil {
		var fi *toolbox.FileInfo
		if fi, err = s.stat(root, rel, req.Path); err == nil {
			writeJSON(w, http.StatusOK, fi)
			return
		}
	}
	writeError(w, r, s.log, err)
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	if err := s.delete(r); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) delete(r *http.Request) error {
	p := r.URL.Query().Get("path")
	recursive, err := queryBool(r, "recursive", false)
	if err != nil {
		return err
	}
	root, rel, err := s.resolve(p)
	if err != nil {
		return err
	}
	if rel == "." {
		return drydock.Errorf(drydock.EINVALID, "the workspace root cannot be deleted")
	}
	fi, err := root.Lstat(rel)
	if err != nil {
		return fsError(p, err)
	}
	if fi.IsDir() && recursive {
		err = root.RemoveAll(rel)
	} else {
		err = root.Remove(rel)
	}
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Some systems report a non-empty directory as EEXIST.
			return drydock.Errorf(drydock.ECONFLICT, "%s: directory is not empty; set recursive", p)
		}
		return fsError(p, err)
	}
	return nil
}
