package client_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/drydockhq/drydock/client"
)

// writeTree makes files (a name ending in "/" is a directory) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if name[len(name)-1] == '/' {
			os.MkdirAll(p, 0o755)
			continue
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// packed lists the names of PackDir's archive of dir.
func packed(t *testing.T, dir string, opt client.PackOptions) ([]string, client.PackStats) {
	t.Helper()
	var buf bytes.Buffer
	st, err := client.PackDir(&buf, dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n := h.Name
		if h.Typeflag == tar.TypeSymlink {
			n += " -> " + h.Linkname
		}
		names = append(names, n)
	}
	return names, st
}

// TestPackDirHonoursGitignore: the patterns people write in .gitignore
// files, at the root and below, leave out what git would.
func TestPackDirHonoursGitignore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		".gitignore": "# build output\n/dist\nnode_modules/\n*.log\n!keep.log\n**/cache/**\nsecret?.env\n*.[oa]\ntrailing.txt   \n\\#literal\n",
		"README.md":  "x", "dist/app.js": "x", "src/dist/kept.js": "x", "node_modules/react/index.js": "x",
		"web/node_modules/x.js": "x", "debug.log": "x", "web/keep.log": "x", "keep.log": "x",
		"a/cache/b/c.txt": "x", "cache.txt": "x", "secret1.env": "x", "secret10.env": "x",
		"lib.o": "x", "lib.c": "x", "trailing.txt": "x", "#literal": "x",
		"web/.gitignore": "*.tmp\n!important.tmp\n/local.json\n",
		"web/a.tmp":      "x", "web/important.tmp": "x", "web/local.json": "x", "web/sub/local.json": "x",
		".git/HEAD": "ref: refs/heads/main\n", ".git/objects/ab": "x",
		"build/": "",
	})
	if err := os.Symlink("src/dist/kept.js", filepath.Join(dir, "link.js")); err != nil {
		t.Fatal(err)
	}
	names, st := packed(t, dir, client.PackOptions{})
	want := []string{".gitignore", "README.md", "a/", "a/cache/", "build/", "cache.txt", "keep.log", "lib.c",
		"link.js -> src/dist/kept.js", "secret10.env", "src/", "src/dist/", "src/dist/kept.js",
		"web/", "web/.gitignore", "web/important.tmp", "web/keep.log", "web/sub/", "web/sub/local.json"}
	if !slices.Equal(names, want) {
		t.Errorf("packed:\n%q\nwant:\n%q", names, want)
	}
	if st.Files != 11 || st.Links != 1 || st.Ignored == 0 {
		t.Errorf("stats %+v", st)
	}

	withGit, _ := packed(t, dir, client.PackOptions{IncludeGit: true})
	if !slices.Contains(withGit, ".git/HEAD") || !slices.Contains(withGit, ".git/objects/ab") {
		t.Errorf("IncludeGit left .git out: %q", withGit)
	}
}

// TestPackDirSkipsSpecialFiles: a FIFO in the directory is reported and
// left out; the rest is packed.
func TestPackDirSkipsSpecialFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "x"})
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	var skipped []string
	names, _ := packed(t, dir, client.PackOptions{Skipped: func(rel string, _ os.FileMode) { skipped = append(skipped, rel) }})
	if !slices.Equal(names, []string{"a.txt"}) || !slices.Equal(skipped, []string{"pipe"}) {
		t.Errorf("packed %q, skipped %q", names, skipped)
	}
}
