package clienttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/drydockhq/drydock"
)

// createRequest is the body of a job creation: the spec, and "prompt" as
// another name of its task.
type createRequest struct {
	drydock.JobSpec
	Prompt string `json:"prompt"`
}

// creates reports whether r creates a job, the only request that may send
// multipart/form-data (a spec and a workspace archive).
func creates(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	switch r.URL.Path {
	case "/v1/jobs", "/schedule", "/submit":
		return true
	}
	return false
}

// readUpload reads a multipart creation as the real server does: the parts
// "spec" (the JSON of a plain creation) and "workspace" (a tar, tar.gz or
// zip file, told by its first bytes). It returns the spec and the
// archive's size; the fake keeps no archive and checks no entry.
func readUpload(w http.ResponseWriter, r *http.Request) (createRequest, int64, error) {
	var req createRequest
	mr, err := r.MultipartReader()
	if err != nil {
		return req, 0, drydock.Errorf(drydock.EINVALID, "read the multipart body: %v", err)
	}
	var spec []byte
	var size int64
	seenSpec, seenWorkspace := false, false
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return req, 0, drydock.Errorf(drydock.EINVALID, "read the multipart body: %v", err)
		}
		switch part.FormName() {
		case "spec":
			if seenSpec {
				return req, 0, drydock.Errorf(drydock.EINVALID, `the part "spec" appears twice; give it once`)
			}
			seenSpec = true
			if spec, err = io.ReadAll(http.MaxBytesReader(w, part, 1<<20)); err != nil {
				return req, 0, drydock.Errorf(drydock.ETOOLARGE, `the part "spec" is larger than 1 MiB`)
			}
		case "workspace":
			if seenWorkspace {
				return req, 0, drydock.Errorf(drydock.EINVALID, `the part "workspace" appears twice; send one archive`)
			}
			seenWorkspace = true
			if part.FileName() == "" {
				return req, 0, drydock.Errorf(drydock.EINVALID, `the part "workspace" must be a file (curl: -F workspace=@FILE, with the @)`)
			}
			head := make([]byte, 512)
			n, _ := io.ReadFull(part, head)
			if err := sniffArchive(head[:n]); err != nil {
				return req, 0, err
			}
			rest, err := io.Copy(io.Discard, part)
			if err != nil {
				return req, 0, drydock.Errorf(drydock.EINVALID, `read the part "workspace": %v`, err)
			}
			size = int64(n) + rest
		default:
			return req, 0, drydock.Errorf(drydock.EINVALID, "unknown part %q; send the parts \"spec\" and \"workspace\"", part.FormName())
		}
	}
	switch {
	case !seenSpec:
		return req, 0, drydock.Errorf(drydock.EINVALID, `the part "spec" is missing`)
	case !seenWorkspace:
		return req, 0, drydock.Errorf(drydock.EINVALID, `the part "workspace" is missing (a job without files takes a JSON body)`)
	}
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, 0, drydock.Errorf(drydock.EINVALID, `part "spec": bad job request: %v`, err)
	}
	return req, size, nil
}

// sniffArchive tells an archive from its first bytes, as the real server
// does: anything but tar, tar.gz and zip is 415.
func sniffArchive(head []byte) error {
	switch {
	case len(head) == 0:
		return drydock.Errorf(drydock.EINVALID, "workspace archive is empty; send a tar, tar.gz or zip file")
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}),
		bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")),
		len(head) >= 262 && bytes.Equal(head[257:262], []byte("ustar")),
		len(head) == 512 && bytes.Count(head, []byte{0}) == 512:
		return nil
	}
	return drydock.Errorf(drydock.EUNSUPPORTEDMEDIA, "workspace part is not a tar, tar.gz or zip archive (curl: -F workspace=@FILE, with the @)")
}
