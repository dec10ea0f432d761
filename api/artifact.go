package api

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/drydockhq/drydock"
)

// artifact opens the stored archive of a visible, archived job.
func (s *Server) artifact(r *http.Request) (*drydock.Job, io.ReadCloser, error) {
	job, err := s.lookup(r)
	if err != nil {
		return nil, nil, err
	}
	if job.ArtifactKey == "" {
		if job.Status.Terminal() {
			return nil, nil, drydock.Errorf(drydock.ENOTFOUND, "job %s ended without an archived workspace", job.ID)
		}
		return nil, nil, drydock.Errorf(drydock.ECONFLICT, "job %s is %s; its workspace is archived when it ends", job.ID, job.Status)
	}
	rc, err := s.artifacts.Get(r.Context(), job.ArtifactKey)
	if err != nil {
		return nil, nil, fmt.Errorf("open artifact of job %s: %w", job.ID, err)
	}
	return job, rc, nil
}

func (s *Server) handleArtifactTarGz(w http.ResponseWriter, r *http.Request) {
	job, rc, err := s.artifact(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer rc.Close()
	h := w.Header()
	h.Set("Content-Type", "application/gzip")
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.tar.gz"`, job.ID))
	if job.ArtifactSize > 0 {
		h.Set("Content-Length", strconv.FormatInt(job.ArtifactSize, 10))
	}
	if _, err := io.Copy(w, rc); err != nil {
		s.log.Debug("artifact download interrupted", "job_id", job.ID, "err", err)
	}
}

// handleArtifactZip converts the stored tar.gz to zip on the fly, entry by
// entry, so that neither archive is ever held in memory.
func (s *Server) handleArtifactZip(w http.ResponseWriter, r *http.Request) {
	job, rc, err := s.artifact(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer rc.Close()
	gz, err := gzip.NewReader(rc)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("read artifact of job %s: %w", job.ID, err))
		return
	}
	defer gz.Close()
	h := w.Header()
	h.Set("Content-Type", "application/zip")
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.zip"`, job.ID))
	if err := tarToZip(w, tar.NewReader(gz)); err != nil {
		// Headers are gone; abort so the client sees a broken transfer
		// rather than a truncated archive that looks complete.
		s.log.Warn("zip conversion failed", "job_id", job.ID, "err", err)
		panic(http.ErrAbortHandler)
	}
}

func tarToZip(w io.Writer, tr *tar.Reader) error {
	zw := zip.NewWriter(w)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		if name == "." || name == ".." || strings.HasPrefix(name, "../") || path.IsAbs(name) {
			continue
		}
		fh := &zip.FileHeader{Name: name, Modified: hdr.ModTime, Method: zip.Deflate}
		switch hdr.Typeflag {
		case tar.TypeDir:
			fh.Name += "/"
			fh.Method = zip.Store
			fh.SetMode(hdr.FileInfo().Mode())
			if _, err := zw.CreateHeader(fh); err != nil {
				return err
			}
		case tar.TypeReg:
			fh.SetMode(hdr.FileInfo().Mode())
			fw, err := zw.CreateHeader(fh)
			if err != nil {
				return err
			}
			if _, err := io.Copy(fw, tr); err != nil {
				return err
			}
		case tar.TypeSymlink:
			fh.SetMode(hdr.FileInfo().Mode())
			fh.Method = zip.Store
			fw, err := zw.CreateHeader(fh)
			if err != nil {
				return err
			}
			if _, err := io.WriteString(fw, hdr.Linkname); err != nil {
				return err
			}
		}
	}
	return zw.Close()
}
