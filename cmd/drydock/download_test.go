package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/client/clienttest"
)

func archived(t *testing.T, srv *clienttest.Server) (string, []byte) {
	t.Helper()
	j := srv.AddJob(drydock.JobSpec{Task: "t"}, time.Now())
	data := bytes.Repeat([]byte("tar.gz bytes "), 50_000)
	srv.SetArtifact(j.ID, "tar.gz", data)
	srv.SetArtifact(j.ID, "zip", []byte("PK zip bytes"))
	return j.ID, data
}

func TestDownloadCommand(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	id, data := archived(t, srv)
	dir := t.TempDir()
	out := filepath.Join(dir, "ws.tar.gz")

	r := newRun()
	if err := r.exec("download", id, "-o", out); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("saved file: %d bytes, %v; want the %d archive bytes", len(got), err, len(data))
	}
	mustContain(t, "stdout", r.out.String(), "Saved "+id+" (634.8 KiB) to "+out)

	// No overwrite without --force, and the file is left alone.
	os.WriteFile(out, []byte("mine"), 0o644)
	err := newRun().exec("download", id, "-o", out)
	if err == nil || !strings.Contains(err.Error(), "already exists: use --force") {
		t.Errorf("existing file: %v", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "mine" {
		t.Errorf("existing file changed to %d bytes", len(b))
	}
	if err := newRun().exec("download", id, "-o", out, "--force"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); !bytes.Equal(b, data) {
		t.Errorf("--force did not overwrite")
	}

	// The format follows -o's extension.
	zipOut := filepath.Join(dir, "ws.zip")
	r = newRun()
	if err := r.exec("download", id, "-o", zipOut, "--json"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(zipOut); string(b) != "PK zip bytes" {
		t.Errorf("zip file holds %q", b)
	}
	if want := fmt.Sprintf(`{"bytes":12,"format":"zip","path":%q}`+"\n", zipOut); r.out.String() != want {
		t.Errorf("--json printed %q, want %q", r.out.String(), want)
	}

	// To standard output.
	r = newRun()
	if err := r.exec("download", id, "-o", "-", "--format", "zip"); err != nil || r.out.String() != "PK zip bytes" {
		t.Errorf("-o -: %q, %v", r.out.String(), err)
	}

	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("directory holds %d entries, want 2 (no temporary files left)", len(entries))
	}
}

func TestDownloadFlagErrors(t *testing.T) {
	t.Parallel()
	srv, newRun := setupFake(t)
	pending := srv.AddJob(drydock.JobSpec{Task: "t"}, time.Now())
	dir := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"download", pending.ID, "-o", filepath.Join(dir, "x.zip"), "--format", "tar.gz"}, "names a zip file but --format is tar.gz"},
		{[]string{"download", pending.ID, "--format", "rar", "-o", filepath.Join(dir, "x")}, `--format "rar": use tar.gz or zip`},
		{[]string{"download", pending.ID, "-o", filepath.Join(dir, "x.tgz")}, "has no archived workspace yet"},
		{[]string{"download", "nope", "-o", filepath.Join(dir, "y.tgz")}, "job nope not found"},
		{[]string{"download", pending.ID, "-o", filepath.Join(dir, "missing", "x.tgz")}, "create the output file"},
	}
	for _, tt := range tests {
		err := newRun().exec(tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed downloads left %d files", len(entries))
	}
}

func TestDownloadDefaultName(t *testing.T) {
	// t.Chdir rules out t.Parallel.
	srv, newRun := setupFake(t)
	id, data := archived(t, srv)
	t.Chdir(t.TempDir())
	if err := newRun().exec("download", id); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(id + ".tar.gz"); err != nil || !bytes.Equal(b, data) {
		t.Errorf("%s.tar.gz: %d bytes, %v", id, len(b), err)
	}
	if err := newRun().exec("download", id, "--format", "zip"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(id + ".zip"); err != nil || string(b) != "PK zip bytes" {
		t.Errorf("%s.zip: %q, %v", id, b, err)
	}
}

func TestFailedDownloadLeavesNothing(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000")
		w.Write(make([]byte, 30000))
	}))
	t.Cleanup(hs.Close)
	dir := t.TempDir()
	r := &cliRun{t: t, url: hs.URL}
	err := r.exec("download", "j1", "-o", filepath.Join(dir, "j1.tar.gz"))
	if err == nil {
		t.Fatal("a download cut short succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed download left %v", entries)
	}
}
