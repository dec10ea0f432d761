package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"

	"github.com/drydockhq/drydock"
)

// WithWorkspace makes Schedule create the job with a workspace archive (a
// tar, tar.gz or zip file; the server tells them by content), sent with
// the spec as multipart/form-data. open is called for each attempt, since
// a retry sends the archive again, and what it returns is closed after.
// WorkspaceFile and WorkspaceDir make an open function.
func WithWorkspace(open func() (io.ReadCloser, error)) ScheduleOption {
	return func(o *scheduleOptions) { o.workspace = open }
}

// WorkspaceFile opens an archive file for WithWorkspace, sent as it is.
func WorkspaceFile(path string) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return os.Open(path) }
}

// WorkspaceDir packs a directory for WithWorkspace with PackDir, as it is
// sent (nothing is written to disk). A packing error ends the upload
// early, and Schedule returns it.
func WorkspaceDir(dir string, opt PackOptions) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() {
			_, err := PackDir(pw, dir, opt)
			pw.CloseWithError(err)
		}()
		return pr, nil
	}
}

// packError marks an error of the local archive, not of the connection:
// sending again would not help.
type packError struct{ err error }

func (e *packError) Error() string { return "read the workspace: " + e.err.Error() }
func (e *packError) Unwrap() error { return e.err }

// uploadBody streams the spec and the archive as a multipart body. An
// error reading the archive aborts the request with a *packError.
func uploadBody(spec drydock.JobSpec, open func() (io.ReadCloser, error)) (io.ReadCloser, string, error) {
	specJSON, err := json.Marshal(specBody(spec))
	if err != nil {
		return nil, "", fmt.Errorf("encode the job: %w", err)
	}
	archive, err := open()
	if err != nil {
		return nil, "", &packError{err}
	}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		defer archive.Close()
		w, err := mw.CreateFormField("spec")
		if err == nil {
			_, err = w.Write(specJSON)
		}
		if err == nil {
			w, err = mw.CreateFormFile("workspace", "workspace")
		}
		if err == nil {
			if _, rerr := io.Copy(w, readErrs{archive}); rerr != nil {
				err = rerr
			}
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr, mw.FormDataContentType(), nil
}

// readErrs marks errors of the archive's reader as *packError, so that
// they are told apart from the connection's.
type readErrs struct{ r io.Reader }

func (r readErrs) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		err = &packError{err}
	}
	return n, err
}

// sendUpload sends one multipart creation request.
func (c *Client) sendUpload(ctx context.Context, spec drydock.JobSpec, open func() (io.ReadCloser, error), hdr http.Header) (*http.Response, error) {
	body, ctype, err := uploadBody(spec, open)
	if err != nil {
		return nil, err
	}
	h := hdr.Clone()
	h.Set("Content-Type", ctype)
	resp, err := c.sendBody(ctx, http.MethodPost, "/v1/jobs", body, h)
	body.Close()
	return resp, err
}
