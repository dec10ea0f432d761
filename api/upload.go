package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
)

// A job created with an upload: POST /schedule (/submit, /v1/jobs) with a
// multipart/form-data body of two parts, "spec" (the JSON body of a plain
// creation, decoded as strictly) and "workspace" (a tar, tar.gz or zip
// archive, told by its content). The archive is checked whole
// (normalizeArchive) and stored as the job's input before the job exists;
// any refusal stores nothing.

// UploadReadTimeout is how long reading an upload's body may take.
const UploadReadTimeout = 30 * time.Minute

// upload is a validated multipart creation request.
type upload struct {
	spec    drydock.JobSpec
	archive *os.File // the normalized tar.gz
	stats   *archiveStats
	digest  []byte // SHA-256 of the archive as sent, for idempotency
}

func (u *upload) remove() {
	if u != nil && u.archive != nil {
		u.archive.Close()
		os.Remove(u.archive.Name())
	}
}

func (u *upload) digestOrNil() []byte {
	if u == nil {
		return nil
	}
	return u.digest
}

// isMultipart reports whether the request's body is multipart/form-data
// (the boundary, which admitted only the route's media types, checked the
// rest).
func isMultipart(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == mediaMultipart
}

var uploadHelp = `send the parts "spec" (the job as JSON) and "workspace" (a tar, tar.gz or zip file), e.g. curl -F 'spec={"task":"..."}' -F workspace=@project.tar.gz`

// readUpload reads a multipart creation request: the spec part into
// memory (bounded like a JSON body), the workspace part into a temporary
// file (bounded by the upload limit), then validates both. On error
// nothing it made remains; on success the caller removes the upload.
func (s *Server) readUpload(w http.ResponseWriter, r *http.Request) (in *upload, err error) {
	lim := s.cfg.Upload.orDefaults()
	// The server's read timeout fits JSON bodies; an archive of the
	// largest size on a slow link needs longer. The caller is authenticated
	// by now, so this is no gift to anonymous slow senders.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(UploadReadTimeout))
	// The whole body: the archive, the spec and the parts' headers.
	r.Body = http.MaxBytesReader(w, r.Body, lim.Bytes+s.cfg.MaxBodyBytes+64<<10)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, drydock.Errorf(drydock.EINVALID, "the multipart body cannot be read (%v); %s", err, uploadHelp)
	}
	raw, err := os.CreateTemp(s.cfg.UploadDir, "drydock-upload-*")
	if err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	defer func() {
		raw.Close()
		os.Remove(raw.Name())
	}()
	var (
		spec         drydock.JobSpec
		specData     []byte
		haveSpec     bool
		haveArchive  bool
		rawHash      = sha256.New()
		archiveBytes int64
	)
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, uploadReadError(err, lim)
		}
		switch name := part.FormName(); name {
		case "spec":
			if haveSpec {
				return nil, drydock.Errorf(drydock.EINVALID, `the part "spec" appears twice; give it once`)
			}
			haveSpec = true
			specData, err = io.ReadAll(io.LimitReader(part, s.cfg.MaxBodyBytes+1))
			if err != nil {
				return nil, uploadReadError(err, lim)
			}
			if int64(len(specData)) > s.cfg.MaxBodyBytes {
				return nil, drydock.Errorf(drydock.ETOOLARGE, `the part "spec" is larger than %d bytes`, s.cfg.MaxBodyBytes)
			}
			// Checked at once: a client that sends the spec first (the CLI
			// and curl -F in that order do) learns of a mistake before it
			// sends the archive.
			if spec, err = decodeSpecPart(specData); err != nil {
				return nil, err
			}
		case "workspace":
			if haveArchive {
				return nil, drydock.Errorf(drydock.EINVALID, `the part "workspace" appears twice; send one archive`)
			}
			haveArchive = true
			// A file part: an HTML form can send one only from a file the
			// user picked, so a page cannot make a browser that omits
			// Origin submit an archive typed into a text field; and curl
			// without the @ sends the file's name as text.
			if part.FileName() == "" {
				return nil, drydock.Errorf(drydock.EINVALID, `the part "workspace" must be a file (curl: -F workspace=@FILE, with the @)`)
			}
			if archiveBytes, err = copyBounded(raw, part, rawHash, lim.Bytes); err != nil {
				return nil, uploadReadError(err, lim)
			}
		default:
			return nil, drydock.Errorf(drydock.EINVALID, "unknown part %q; %s", name, uploadHelp)
		}
	}
	switch {
	case !haveSpec:
		return nil, drydock.Errorf(drydock.EINVALID, `the part "spec" is missing; %s`, uploadHelp)
	case !haveArchive:
		return nil, drydock.Errorf(drydock.EINVALID, `the part "workspace" is missing (a job without files takes a JSON body); %s`, uploadHelp)
	case archiveBytes == 0:
		return nil, drydock.Errorf(drydock.EINVALID, "the workspace archive is empty; send a tar, tar.gz or zip file (curl: -F workspace=@FILE, with the @)")
	}
	norm, err := os.CreateTemp(s.cfg.UploadDir, "drydock-input-*")
	if err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	in = &upload{spec: spec, archive: norm, digest: rawHash.Sum(nil)}
	defer func() {
		if err != nil {
			in.remove()
			in = nil
		}
	}()
	if in.stats, err = normalizeArchive(norm, raw, lim); err != nil {
		return in, err
	}
	return in, nil
}

// decodeSpecPart decodes and checks the spec part.
func decodeSpecPart(data []byte) (drydock.JobSpec, error) {
	var req createRequest
	if err := decodeJSONBytes(data, &req, createBody); err != nil {
		return drydock.JobSpec{}, specPartError(err)
	}
	return req.spec()
}

// specPartError says that a decoding error is about the spec part, not
// the whole body.
func specPartError(err error) error {
	var de *drydock.Error
	if errors.As(err, &de) {
		return drydock.Errorf(de.Code, `part "spec": %s`, de.Message)
	}
	return err
}

// copyBounded copies src to dst and h until EOF; more than limit bytes is
// ETOOLARGE.
func copyBounded(dst io.Writer, src io.Reader, h hash.Hash, limit int64) (int64, error) {
	n, err := io.Copy(io.MultiWriter(dst, h), io.LimitReader(src, limit+1))
	if err != nil {
		return n, err
	}
	if n > limit {
		return n, drydock.Errorf(drydock.ETOOLARGE, "the workspace archive is larger than %d MiB (the server's --max-upload-mib)", limit>>20)
	}
	return n, nil
}

func uploadReadError(err error, lim UploadLimits) error {
	var (
		maxErr *http.MaxBytesError
		de     *drydock.Error
	)
	switch {
	case errors.As(err, &de):
		return err
	case errors.As(err, &maxErr):
		return drydock.Errorf(drydock.ETOOLARGE, "the request is larger than the upload limit of %d MiB (the server's --max-upload-mib)", lim.Bytes>>20)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return drydock.Errorf(drydock.EINVALID, "the multipart body ends early; %s", uploadHelp)
	}
	return fmt.Errorf("%w: %w", drydock.Errorf(drydock.EINVALID, "the multipart body cannot be read; %s", uploadHelp), err)
}

// acquireUpload takes one of the server's upload slots: each upload in
// progress holds up to two temporary files of up to the upload and
// expanded limits, so their number bounds the disk they can take.
func (s *Server) acquireUpload() (release func(), ok bool) {
	select {
	case s.uploads <- struct{}{}:
		return func() { <-s.uploads }, true
	default:
		return nil, false
	}
}

// removeStaleUploads deletes temporary upload files that a crashed
// server left in dir, once they are older than any upload can be.
func removeStaleUploads(dir string, log interface{ Warn(string, ...any) }) {
	if dir == "" {
		return // the system's temporary directory is not ours to sweep
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, "drydock-upload-") && !strings.HasPrefix(name, "drydock-input-") {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > 2*UploadReadTimeout+time.Hour {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				log.Warn("remove a stale upload", "file", name, "err", err)
			}
		}
	}
}

// inputKey is where the archive a job starts from is kept.
func inputKey(jobID string) string { return jobID + ".input.tar.gz" }

// storeInput puts the normalized archive into the artifact store and
// records it on job.
func (s *Server) storeInput(ctx context.Context, job *drydock.Job, in *upload) error {
	if _, err := in.archive.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("store input of job %s: %w", job.ID, err)
	}
	key := inputKey(job.ID)
	n, err := s.artifacts.Put(ctx, key, in.archive)
	if err != nil {
		return fmt.Errorf("store input of job %s: %w", job.ID, err)
	}
	job.InputKey, job.InputSize = key, n
	s.log.Info("workspace upload stored", "job_id", job.ID, "format", in.stats.Format, "entries", in.stats.Entries, "bytes", in.stats.Bytes, "stored", n)
	return nil
}

// dropInput deletes the input of a job that was not created.
func (s *Server) dropInput(job *drydock.Job) {
	if job.InputKey == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.artifacts.Delete(ctx, job.InputKey); err != nil && drydock.ErrorCode(err) != drydock.ENOTFOUND {
		s.log.Warn("delete a job's input archive", "job_id", job.ID, "key", job.InputKey, "err", err)
	}
}
