package api

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/secretbox"
	"github.com/drydockhq/drydock/toolbox"
)

// MaxViewBytes is the largest file GET /v1/jobs/{id}/files/... answers
// inline; bigger files need ?download=1 (which streams any size).
const MaxViewBytes = 8 << 20

// maxListEntries bounds a directory listing read from an archive.
const maxListEntries = 5000

// File types of FileInfo.Type.
const (
	fileTypeFile    = "file"
	fileTypeDir     = "dir"
	fileTypeSymlink = "symlink"
	fileTypeOther   = "other"
)

// FileInfo is one entry of a workspace directory listing. Path is relative
// to the workspace root.
type FileInfo struct {
	Name       string    `json:"name"`
	Path       string    `json:"path"`
	Type       string    `json:"type"` // file, dir, symlink, other
	Size       int64     `json:"size"`
	Mode       uint32    `json:"mode"`
	ModTime    time.Time `json:"mod_time,omitzero"`
	LinkTarget string    `json:"link_target,omitempty"`
}

// Listing is the answer for a directory.
type Listing struct {
	Path string `json:"path"` // "" is the workspace root
	// Source says where the listing was read: "sandbox" while the job runs,
	// "archive" once it has ended.
	Source    string     `json:"source"`
	Entries   []FileInfo `json:"entries"`
	Truncated bool       `json:"truncated,omitempty"`
}

// workspacePath validates a path taken from the URL. Only relative paths
// without ".." segments pass, so no spelling can leave the workspace; the
// sandbox's toolboxd and the archive reader confine it again.
func workspacePath(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", drydock.Errorf(drydock.EINVALID, "path must not contain NUL bytes")
	}
	if strings.HasPrefix(p, "/") {
		return "", drydock.Errorf(drydock.EINVALID, "paths are relative to the workspace root; drop the leading /")
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == ".." {
			return "", drydock.Errorf(drydock.EINVALID, "path must not contain '..'")
		}
	}
	return strings.TrimPrefix(path.Clean("/"+p), "/"), nil
}

func (s *Server) handleFiles(w http.ResponseWriter, r *http.Request) {
	for k := range r.URL.Query() {
		if k != "download" {
			s.writeError(w, r, drydock.Errorf(drydock.EINVALID, "unknown query parameter %q; accepted: download", k))
			return
		}
	}
	p, err := workspacePath(r.PathValue("path"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	download := r.URL.Query().Get("download")
	dl := download == "1" || download == "true"
	job, err := s.lookup(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sb, done := s.workspaceSource(w, r, job, "")
	switch {
	case done:
	case sb != nil:
		s.serveLiveFile(w, r, job, sb, p, dl)
	default:
		s.serveArchivedFile(w, r, job, p, dl)
	}
}

// workspaceSource decides where a job's workspace is read from: live from
// its sandbox while it runs, else from its archive (an ended job, or one
// whose sandbox is already gone while it is archived). It returns the
// sandbox for a live read, nil for the archive, or done when it has
// answered the request itself because neither is there. diff names a
// diff as what was asked for ("" for files).
func (s *Server) workspaceSource(w http.ResponseWriter, r *http.Request, job *drydock.Job, diff string) (sb *drydock.Sandbox, done bool) {
	if !job.Status.Terminal() && job.Status != drydock.StatusPending && s.cfg.Sandboxes != nil && job.SandboxID != "" {
		sb, err := s.sandboxOf(r.Context(), job)
		if err == nil {
			return sb, false
		}
		if job.ArtifactKey == "" {
			s.writeError(w, r, err)
			return nil, true
		}
	}
	if job.ArtifactKey != "" {
		return nil, false
	}
	switch {
	case job.Status.Terminal():
		s.writeError(w, r, drydock.Errorf(drydock.ENOTFOUND, "job %s ended without an archived workspace%s", job.ID, diff))
	case job.Status == drydock.StatusPending:
		s.writeError(w, r, drydock.Errorf(drydock.ECONFLICT, "job %s has not started yet; it has no workspace%s", job.ID, diff))
	case s.cfg.Sandboxes == nil:
		s.writeError(w, r, drydock.Errorf(drydock.ECONFLICT, "job %s is %s; this server reads its workspace once it is archived", job.ID, job.Status))
	default:
		s.writeError(w, r, drydock.Errorf(drydock.EUNAVAILABLE, "job %s is still creating its sandbox; try again in a moment", job.ID))
	}
	return nil, true
}

func (s *Server) serveLiveFile(w http.ResponseWriter, r *http.Request, job *drydock.Job, sb *drydock.Sandbox, p string, download bool) {
	// The archive is masked as it is written; live files are masked here.
	secrets, err := s.secretValues(job)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	tb := s.toolboxFor(sb)
	target := p
	if target == "" {
		target = "."
	}
	fi, err := tb.Stat(r.Context(), target)
	if err != nil {
		s.writeError(w, r, sandboxFileError(p, err))
		return
	}
	switch fi.Type {
	case toolbox.TypeDir:
		res, err := tb.ListDepth(r.Context(), target, 1)
		if err != nil {
			s.writeError(w, r, sandboxFileError(p, err))
			return
		}
		l := Listing{Path: p, Source: "sandbox", Entries: make([]FileInfo, 0, len(res.Entries)), Truncated: res.Truncated}
		for _, e := range res.Entries {
			l.Entries = append(l.Entries, FileInfo{Name: e.Name, Path: e.Path, Type: e.Type, Size: e.Size, Mode: e.Mode, ModTime: e.ModTime, LinkTarget: e.LinkTarget})
		}
		maskNames(l.Entries, secrets)
		sortEntries(l.Entries)
		writeJSON(w, http.StatusOK, l)
		return
	case toolbox.TypeSymlink:
		s.writeError(w, r, drydock.Errorf(drydock.EINVALID, "%s is a symbolic link to %q; open its target instead", p, secretbox.MaskString(fi.LinkTarget, secrets)))
		return
	case toolbox.TypeFile:
	default:
		s.writeError(w, r, drydock.Errorf(drydock.EINVALID, "%s is not a regular file", p))
		return
	}
	if err := checkViewSize(p, fi.Size, download); err != nil {
		s.writeError(w, r, err)
		return
	}
	// A one-file tar streams any size without holding it in memory, and
	// toolboxd applies the same confinement as to every other path.
	rc, err := tb.DownloadTar(r.Context(), target)
	if err != nil {
		s.writeError(w, r, sandboxFileError(p, err))
		return
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if errors.Is(err, io.EOF) {
		// toolboxd sends an empty archive when the file goes between its
		// stat and its open.
		s.writeError(w, r, drydock.Errorf(drydock.ENOTFOUND, "%s does not exist in the workspace (it was removed while it was read)", p))
		return
	}
	if err != nil {
		s.writeError(w, r, fmt.Errorf("read %s of job %s from its sandbox: %w", p, job.ID, err))
		return
	}
	if hdr.Typeflag != tar.TypeReg {
		s.writeError(w, r, drydock.Errorf(drydock.ECONFLICT, "%s changed while it was read; try again", p))
		return
	}
	// Same length: the size already sent stays right.
	s.writeFile(w, r, job, p, hdr.Size, hdr.ModTime, secretbox.NewReader(tr, secrets), download)
}

// sandboxFileError keeps toolboxd's answer when it is a user error (not
// found, outside the workspace) and hides anything else.
func sandboxFileError(p string, err error) error {
	switch drydock.ErrorCode(err) {
	case drydock.ENOTFOUND:
		return drydock.Errorf(drydock.ENOTFOUND, "%s does not exist in the workspace", p)
	case drydock.EINVALID, drydock.EFORBIDDEN, drydock.ETOOLARGE:
		return err
	case drydock.EUNAVAILABLE:
		return drydock.Errorf(drydock.EUNAVAILABLE, "the job's sandbox does not answer; try again")
	}
	return fmt.Errorf("read %s from the sandbox: %w", p, err)
}

func checkViewSize(p string, size int64, download bool) error {
	if !download && size > MaxViewBytes {
		return drydock.Errorf(drydock.ETOOLARGE, "%s is %d bytes; files over %d bytes are only served with ?download=1", p, size, MaxViewBytes)
	}
	return nil
}

// serveArchivedFile reads one path of the stored archive in a single
// streaming pass: the entry's bytes for a file, its children for a
// directory. Entries are matched by their cleaned names; names that would
// leave the workspace are skipped and symbolic links are never followed.
func (s *Server) serveArchivedFile(w http.ResponseWriter, r *http.Request, job *drydock.Job, p string, download bool) {
	rc, err := s.artifacts.Get(r.Context(), job.ArtifactKey)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("open artifact of job %s: %w", job.ID, err))
		return
	}
	defer rc.Close()
	gz, err := gzip.NewReader(bufio.NewReaderSize(rc, 64<<10))
	if err != nil {
		s.writeError(w, r, fmt.Errorf("read artifact of job %s: %w", job.ID, err))
		return
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	l := Listing{Path: p, Source: "archive", Entries: []FileInfo{}}
	children := map[string]int{} // name -> index in l.Entries
	isDir := p == ""
	prefix := ""
	if p != "" {
		prefix = p + "/"
	}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			s.writeError(w, r, fmt.Errorf("read artifact of job %s: %w", job.ID, err))
			return
		}
		name, ok := archiveName(hdr.Name)
		if !ok {
			continue
		}
		if name == p {
			switch hdr.Typeflag {
			case tar.TypeReg:
				if err := checkViewSize(p, hdr.Size, download); err != nil {
					s.writeError(w, r, err)
					return
				}
				s.writeFile(w, r, job, p, hdr.Size, hdr.ModTime, tr, download)
				return
			case tar.TypeDir:
				isDir = true
				continue
			case tar.TypeSymlink:
				s.writeError(w, r, drydock.Errorf(drydock.EINVALID, "%s is a symbolic link to %q; open its target instead", p, hdr.Linkname))
				return
			default:
				s.writeError(w, r, drydock.Errorf(drydock.EINVALID, "%s is not a regular file", p))
				return
			}
		}
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok || rest == "" {
			continue
		}
		isDir = true
		child, deeper, _ := strings.Cut(rest, "/")
		i, seen := children[child]
		if !seen {
			if len(l.Entries) >= maxListEntries {
				l.Truncated = true
				continue
			}
			i = len(l.Entries)
			children[child] = i
			l.Entries = append(l.Entries, FileInfo{Name: child, Path: prefix + child, Type: fileTypeDir, Mode: 0o755})
		}
		if deeper == "" {
			l.Entries[i] = archiveInfo(hdr, child, prefix+child)
		}
	}
	if !isDir {
		s.writeError(w, r, drydock.Errorf(drydock.ENOTFOUND, "%s is not in the archived workspace", p))
		return
	}
	sortEntries(l.Entries)
	writeJSON(w, http.StatusOK, l)
}

// archiveName cleans an entry name; ok is false for names that would lead
// out of the workspace or name its root.
func archiveName(n string) (string, bool) {
	n = strings.TrimPrefix(n, "./")
	if n == "" || strings.HasPrefix(n, "/") || strings.ContainsRune(n, 0) {
		return "", false
	}
	for seg := range strings.SplitSeq(n, "/") {
		if seg == ".." {
			return "", false
		}
	}
	c := path.Clean(n)
	if c == "." {
		return "", false
	}
	return c, true
}

func archiveInfo(hdr *tar.Header, name, p string) FileInfo {
	fi := FileInfo{Name: name, Path: p, Size: hdr.Size, Mode: uint32(hdr.FileInfo().Mode().Perm()), ModTime: hdr.ModTime.UTC()}
	switch hdr.Typeflag {
	case tar.TypeReg:
		fi.Type = fileTypeFile
	case tar.TypeDir:
		fi.Type, fi.Size = fileTypeDir, 0
	case tar.TypeSymlink:
		fi.Type, fi.LinkTarget = fileTypeSymlink, hdr.Linkname
	default:
		fi.Type = fileTypeOther
	}
	return fi
}

// sortEntries puts directories first, then names in byte order, as file
// trees usually show them.
func sortEntries(es []FileInfo) {
	sort.SliceStable(es, func(i, j int) bool {
		di, dj := es[i].Type == fileTypeDir, es[j].Type == fileTypeDir
		if di != dj {
			return di
		}
		return es[i].Name < es[j].Name
	})
}

// writeFile streams a file's bytes. Workspace files are whatever the agent
// wrote, so types a browser would run (HTML, SVG, scripts) are sent as plain
// text, and every answer carries a sandboxing CSP: opened directly, a file
// cannot act as the UI's origin.
func (s *Server) writeFile(w http.ResponseWriter, r *http.Request, job *drydock.Job, p string, size int64, mod time.Time, body io.Reader, download bool) {
	h := w.Header()
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "private, no-cache")
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	if !mod.IsZero() {
		h.Set("Last-Modified", mod.UTC().Format(http.TimeFormat))
	}
	name := path.Base(p)
	if download {
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	} else {
		br := bufio.NewReaderSize(body, 512)
		head, _ := br.Peek(512)
		h.Set("Content-Type", safeContentType(name, head))
		h.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": name}))
		body = br
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := io.CopyN(w, body, size); err != nil {
		s.log.Debug("file download interrupted", "job_id", job.ID, "path", p, "err", err)
		// A short body must not look complete.
		panic(http.ErrAbortHandler)
	}
}

// safeContentType names a file's type from its extension, else from its
// first bytes, and downgrades active content to text/plain.
func safeContentType(name string, head []byte) string {
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = http.DetectContentType(head)
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return "application/octet-stream"
	}
	switch {
	case mt == "text/html", mt == "application/xhtml+xml", mt == "image/svg+xml",
		mt == "text/xml", mt == "application/xml", strings.Contains(mt, "javascript"),
		mt == "text/css", mt == "application/wasm":
		return "text/plain; charset=utf-8"
	case strings.HasPrefix(mt, "text/") || mt == "application/json":
		if params["charset"] == "" {
			params["charset"] = "utf-8"
		}
	}
	return mime.FormatMediaType(mt, params)
}
