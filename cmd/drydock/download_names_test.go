package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// The archive is made in the sandbox, so its entry names are the
// sandbox's: download saves the bytes under the name the user chose (or
// the job id) and never reads a name from the archive, so entries such as
// ../../x, /abs or a link cannot steer what lands on the user's disk.
func TestDownloadIsNotSteeredByNamesInTheArchive(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, h := range []*tar.Header{
		{Name: "../../escaped", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1},
		{Name: "/tmp/absolute", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1},
		{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
	} {
		tw.WriteHeader(h)
		if h.Size > 0 {
			tw.Write([]byte("x"))
		}
	}
	tw.Close()
	gz.Close()

	srv, newRun := setupFake(t)
	j := srv.AddJob(drydock.JobSpec{Task: "t"}, time.Now())
	srv.SetArtifact(j.ID, "tar.gz", buf.Bytes())
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "ws.tar.gz")
	if err := newRun().exec("download", j.ID, "-o", out); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, buf.Bytes()) {
		t.Fatalf("saved %d bytes, %v; want the archive's %d bytes as they are", len(got), err, buf.Len())
	}
	for d, want := range map[string]int{dir: 1, parent: 1} {
		if entries, _ := os.ReadDir(d); len(entries) != want {
			t.Errorf("%s holds %d entries, want %d: %v", d, len(entries), want, entries)
		}
	}
	if fi, err := os.Lstat(out); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
		t.Errorf("saved file: %v %v; want a regular file, mode 0644", fi, err)
	}
}
