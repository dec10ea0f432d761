package api_test

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
)

// FuzzUpload: whatever the spec part and the archive hold, the answer is
// 201 with a job whose stored input holds only clean relative names,
// links that stay inside and no special files, or a 4xx JSON error after
// which nothing new is stored; never a 5xx.
func FuzzUpload(f *testing.F) {
	f.Add(spec, tarOf(f, file("a.txt", "x"), dir("d/"), symlink("d/l", "../a.txt"), hardlink("b", "a.txt")))
	f.Add(spec, gz(tarOf(f, file("../x", "x"))))
	f.Add(spec, zipOf(f, upZipEntry{"src/", os.ModeDir | 0o755, ""}, upZipEntry{"src/a", 0o644, "x"}, upZipEntry{"l", os.ModeSymlink | 0o777, "src/a"}))
	f.Add(spec, tarOf(f, symlink("d/l2", "l1/.."), symlink("d/l1", "..")))
	f.Add(`{"task":"x","egress":["a"]}`, tarOf(f, special("p", tar.TypeFifo)))
	f.Add(`{"task":"x"}`, "not an archive")
	f.Add(`[]`, "")
	b := setupUpload(f, api.UploadLimits{Bytes: 1 << 20, Entries: 50, EntryBytes: 1 << 16, Expanded: 1 << 18})
	f.Fuzz(func(t *testing.T, specJSON, archive string) {
		before := b.count(t)
		resp, data := b.post(t, "/v1/jobs", nil, part{"spec", "", specJSON}, part{"workspace", "w", archive})
		switch {
		case resp.StatusCode == http.StatusCreated:
			var j drydock.Job
			if err := json.Unmarshal(data, &j); err != nil {
				t.Fatalf("201 with a body that is no job: %q", data)
			}
			stored, err := b.store.GetJob(t.Context(), j.ID)
			if err != nil || stored.InputKey == "" {
				t.Fatalf("201 but no job with its input: %v %+v", err, stored)
			}
			if err := stored.JobSpec.Validate(); err != nil {
				t.Fatalf("stored an invalid spec: %v", err)
			}
			checkStoredInput(t, b, stored.InputKey)
		case resp.StatusCode >= 400 && resp.StatusCode < 500:
			var e drydock.ErrorBody
			if json.Unmarshal(data, &e) != nil || e.Error.Code == "" || e.Error.Message == "" {
				t.Fatalf("%d without a JSON error: %q", resp.StatusCode, data)
			}
			if after := b.count(t); after != before {
				t.Fatalf("a refused upload (%s) stored something: %d jobs and blobs before, %d after", e.Error.Message, before, after)
			}
		default:
			t.Fatalf("status %d %s", resp.StatusCode, data)
		}
	})
}

// count is the number of jobs plus the number of blobs.
func (b *uploadBundle) count(t *testing.T) int {
	jobs, _, err := b.store.ListJobs(t.Context(), drydock.JobFilter{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(b.artsDir)
	return len(jobs) + len(ents)
}

// checkStoredInput checks the normalized archive on its own terms, without
// the validator's code: names clean and relative, each once, links
// relative and lexically inside, hard links to files before them, nothing
// else.
func checkStoredInput(t *testing.T, b *uploadBundle, key string) {
	rc, err := b.arts.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		t.Fatalf("stored input is not gzip: %v", err)
	}
	seen := map[string]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("stored input is not a tar: %v", err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		if name == "" || path.Clean(name) != name || strings.HasPrefix(name, "/") || name == ".." || strings.HasPrefix(name, "../") || strings.ContainsRune(name, 0) {
			t.Fatalf("stored name %q is not clean and relative", h.Name)
		}
		if _, dup := seen[name]; dup {
			t.Fatalf("stored name %q twice", name)
		}
		seen[name] = h.Typeflag
		switch h.Typeflag {
		case tar.TypeDir, tar.TypeReg:
		case tar.TypeSymlink:
			to := path.Join(path.Dir(name), h.Linkname)
			if strings.HasPrefix(h.Linkname, "/") || to == ".." || strings.HasPrefix(to, "../") {
				t.Fatalf("stored link %q -> %q leaves the workspace", name, h.Linkname)
			}
		case tar.TypeLink:
			if seen[h.Linkname] != tar.TypeReg {
				t.Fatalf("stored hard link %q -> %q is not to an earlier file", name, h.Linkname)
			}
		default:
			t.Fatalf("stored entry %q of type %q", name, h.Typeflag)
		}
		if h.Mode&^0o777 != 0 {
			t.Fatalf("stored entry %q with mode %o", name, h.Mode)
		}
	}
}
