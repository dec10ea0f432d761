package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
	"github.com/drydockhq/drydock/artifact/local"
	"github.com/drydockhq/drydock/store/sqlite"
	"github.com/drydockhq/drydock/watch"
)

type nopQueue struct{}

func (nopQueue) Notify()       {}
func (nopQueue) Cancel(string) {}

// setupAPI runs the real API (development mode) for the CLI.
func setupAPI(t *testing.T) (*sqlite.Store, *local.Store, func() *cliRun) {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	arts, err := local.New(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	srv := api.New(api.Config{DevMode: true}, watch.Wrap(st), nopQueue{}, arts, prometheus.NewRegistry(), nil)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return st, arts, func() *cliRun { return &cliRun{t: t, url: hs.URL} }
}

// inputNames lists the names in a job's stored input archive.
func inputNames(t *testing.T, st *sqlite.Store, arts *local.Store, id string) []string {
	t.Helper()
	j, err := st.GetJob(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if j.InputKey == "" {
		t.Fatalf("job %s has no input", id)
	}
	rc, err := arts.Get(t.Context(), j.InputKey)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return names
		}
		names = append(names, h.Name)
	}
}

func TestScheduleWorkspaceDirectoryHonoursGitignore(t *testing.T) {
	t.Parallel()
	st, arts, newRun := setupAPI(t)
	dir := t.TempDir()
	for name, body := range map[string]string{
		".gitignore": "node_modules/\n*.log\n", "src/app.ts": "export {}\n", "node_modules/x/index.js": "x",
		"debug.log": "x", ".git/HEAD": "ref: refs/heads/main\n", "web/.gitignore": "dist\n", "web/dist/a.js": "x", "web/index.html": "<p>",
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := newRun()
	if err := r.exec("schedule", "--workspace", dir, "fix the failing test"); err != nil {
		t.Fatalf("%v\n%s", err, r.err.String())
	}
	id := strings.TrimSpace(r.out.String())
	got := inputNames(t, st, arts, id)
	want := []string{".gitignore", "src/", "src/app.ts", "web/", "web/.gitignore", "web/index.html"}
	if !slices.Equal(got, want) {
		t.Errorf("uploaded %q; want %q", got, want)
	}

	r = newRun()
	if err := r.exec("schedule", "--workspace", dir, "--include-git", "look at the history"); err != nil {
		t.Fatal(err)
	}
	if got := inputNames(t, st, arts, strings.TrimSpace(r.out.String())); !slices.Contains(got, ".git/HEAD") {
		t.Errorf("--include-git uploaded %q", got)
	}
}

func TestScheduleWorkspaceFileIsSentAsItIs(t *testing.T) {
	t.Parallel()
	st, arts, newRun := setupAPI(t)
	zipPath := filepath.Join(t.TempDir(), "project.zip")
	f, _ := os.Create(zipPath)
	zw := zip.NewWriter(f)
	w, _ := zw.Create("main.py")
	io.WriteString(w, "print('hi')\n")
	zw.Close()
	f.Close()
	r := newRun()
	if err := r.exec("schedule", "--workspace", zipPath, "--json", "fix it"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.out.String(), `"input_size"`) {
		t.Errorf("the job as printed has no input_size: %s", r.out.String())
	}
	var j drydock.Job
	jsonDecode(t, r.out.String(), &j)
	if got := inputNames(t, st, arts, j.ID); !slices.Equal(got, []string{"main.py"}) {
		t.Errorf("uploaded %q", got)
	}

	// An archive the server refuses: its message, and no job.
	bad := filepath.Join(t.TempDir(), "evil.tar")
	f, _ = os.Create(bad)
	tw := tar.NewWriter(f)
	tw.WriteHeader(&tar.Header{Name: "../../etc/cron.d/x", Typeflag: tar.TypeReg, Mode: 0o644})
	tw.Close()
	f.Close()
	r = newRun()
	err := r.exec("schedule", "--workspace", bad, "fix it")
	if err == nil || !strings.Contains(err.Error(), `has a ".." component`) {
		t.Errorf("a refused archive: %v", err)
	}
	if jobs, _, _ := st.ListJobs(t.Context(), drydock.JobFilter{}); len(jobs) != 1 {
		t.Errorf("%d jobs after a refused upload; want 1", len(jobs))
	}

	r = newRun()
	if err := r.exec("schedule", "--workspace", filepath.Join(t.TempDir(), "missing.tgz"), "fix it"); err == nil || !strings.Contains(err.Error(), "--workspace") {
		t.Errorf("a missing file: %v", err)
	}
}

func jsonDecode(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
}
