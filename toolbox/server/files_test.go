package server

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drydockhq/drydock/toolbox"
)

func TestWriteReadStat(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var fi toolbox.FileInfo
	b.ok(http.StatusOK, &fi, "PUT", "/v1/files?path=a/b/c.txt&mode=0600", "hello\n")
	if fi.Path != "a/b/c.txt" || fi.Type != toolbox.TypeFile || fi.Size != 6 || fi.Mode != 0o600 {
		t.Errorf("write returned %+v", fi)
	}
	r := b.ok(http.StatusOK, nil, "GET", "/v1/files?path=a/b/c.txt", nil)
	if string(r.body) != "hello\n" {
		t.Errorf("read = %q", r.body)
	}
	// Rewriting without a mode keeps the file's mode; no temporary file is
	// left behind.
	b.ok(http.StatusOK, &fi, "PUT", "/v1/files?path=a/b/c.txt", "bye")
	if fi.Mode != 0o600 || fi.Size != 3 {
		t.Errorf("rewrite returned %+v; want mode 0600 size 3", fi)
	}
	ents, _ := os.ReadDir(filepath.Join(b.ws, "a", "b"))
	if len(ents) != 1 {
		t.Errorf("a/b holds %d entries, want 1 (no temporary files)", len(ents))
	}
	// Writing through a link inside keeps the link.
	os.Symlink("c.txt", filepath.Join(b.ws, "a", "b", "link"))
	b.ok(http.StatusOK, nil, "PUT", "/v1/files?path=a/b/link", "via link")
	if data, _ := os.ReadFile(filepath.Join(b.ws, "a", "b", "c.txt")); string(data) != "via link" {
		t.Errorf("c.txt = %q after writing through the link", data)
	}
	if fi, _ := os.Lstat(filepath.Join(b.ws, "a", "b", "link")); fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link replaced by a file")
	}

	b.ok(http.StatusOK, &fi, "GET", "/v1/files/stat?path=a", nil)
	if fi.Type != toolbox.TypeDir || fi.Name != "a" {
		t.Errorf("stat a = %+v", fi)
	}
	for _, c := range []struct {
		method, path string
		body         any
		status       int
		code         string
	}{
		{"GET", "/v1/files?path=missing", nil, 404, "not_found"},
		{"GET", "/v1/files?path=a", nil, 400, "invalid"},
		{"GET", "/v1/files/stat?path=missing", nil, 404, "not_found"},
		{"PUT", "/v1/files?path=a", "x", 400, "invalid"},
		{"PUT", "/v1/files?path=.", "x", 400, "invalid"},
		{"PUT", "/v1/files?path=x&mode=999", "x", 400, "invalid"},
		{"PUT", "/v1/files?path=a/b/c.txt/d", "x", 400, "invalid"},
		{"DELETE", "/v1/files?path=.", nil, 400, "invalid"},
		{"DELETE", "/v1/files?path=a", nil, 409, "conflict"},
		{"DELETE", "/v1/files?path=missing", nil, 404, "not_found"},
		{"GET", "/v1/files/list?path=a/b/c.txt", nil, 400, "invalid"},
		{"POST", "/v1/files/move", toolbox.MoveRequest{From: "missing", To: "x"}, 404, "not_found"},
		{"POST", "/v1/files/move", toolbox.MoveRequest{From: "a", To: "a/b/c.txt"}, 409, "conflict"},
		{"POST", "/v1/files/move", map[string]string{"form": "typo"}, 400, "invalid"},
		{"POST", "/v1/files/mkdir", toolbox.MkdirRequest{Path: "a/b/c.txt"}, 409, "conflict"},
		{"GET", "/v1/nothing", nil, 404, "not_found"},
	} {
		r := b.do(c.method, c.path, c.body)
		if r.status != c.status || r.errCode() != c.code {
			t.Errorf("%s %s: %d %s; want %d %s", c.method, c.path, r.status, r.body, c.status, c.code)
		}
	}
}

func TestReadLines(t *testing.T) {
	t.Parallel()
	b := setup(t)
	writeFile(t, filepath.Join(b.ws, "f.txt"), "one\ntwo\nthree\nfour")
	writeFile(t, filepath.Join(b.ws, "empty"), "")
	for _, c := range []struct {
		query, want string
		total       string
		status      int
	}{
		{"start_line=2&end_line=3", "two\nthree\n", "4", 200},
		{"start_line=3", "three\nfour", "4", 200},
		{"end_line=1", "one\n", "4", 200},
		{"start_line=4&end_line=9", "four", "4", 200},
		{"start_line=5", "", "", 400},
		{"start_line=3&end_line=2", "", "", 400},
		{"start_line=x", "", "", 400},
	} {
		r := b.do("GET", "/v1/files?path=f.txt&"+c.query, nil)
		if r.status != c.status {
			t.Errorf("%s: status %d (%s), want %d", c.query, r.status, r.body, c.status)
			continue
		}
		if c.status == 200 && (string(r.body) != c.want || r.header.Get(toolbox.HeaderTotalLines) != c.total) {
			t.Errorf("%s: %q total %s; want %q total %s", c.query, r.body, r.header.Get(toolbox.HeaderTotalLines), c.want, c.total)
		}
	}
	r := b.ok(200, nil, "GET", "/v1/files?path=empty&start_line=1", nil)
	if len(r.body) != 0 || r.header.Get(toolbox.HeaderTotalLines) != "0" {
		t.Errorf("empty file by lines: %q total %s", r.body, r.header.Get(toolbox.HeaderTotalLines))
	}
}

func TestReadSizeCap(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.MaxReadBytes = 100 })
	writeFile(t, filepath.Join(b.ws, "big"), strings.Repeat("0123456789\n", 20))
	if r := b.do("GET", "/v1/files?path=big", nil); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("whole read of a file over the cap: %d %s", r.status, r.body)
	}
	if r := b.do("GET", "/v1/files?path=big&start_line=1&end_line=20", nil); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("line range over the cap: %d %s", r.status, r.body)
	}
	r := b.ok(200, nil, "GET", "/v1/files?path=big&start_line=19", nil)
	if string(r.body) != "0123456789\n0123456789\n" || r.header.Get(toolbox.HeaderTotalLines) != "20" {
		t.Errorf("small range of a big file: %q", r.body)
	}
}

func TestListMoveMkdirDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ok(200, nil, "POST", "/v1/files/mkdir", toolbox.MkdirRequest{Path: "d/e/f"})
	b.ok(200, nil, "POST", "/v1/files/mkdir", toolbox.MkdirRequest{Path: "d/e/f"}) // exists: fine
	b.ok(200, nil, "PUT", "/v1/files?path=d/x.txt", "x")
	b.ok(200, nil, "PUT", "/v1/files?path=d/e/y.txt", "yy")

	list := func(query string) []string {
		var ls toolbox.ListResult
		b.ok(200, &ls, "GET", "/v1/files/list?"+query, nil)
		var out []string
		for _, e := range ls.Entries {
			out = append(out, e.Path)
		}
		return out
	}
	if diff := cmp.Diff([]string{"d"}, list("")); diff != "" {
		t.Errorf("list root (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"d/e", "d/e/f", "d/e/y.txt", "d/x.txt"}, list("path=d&depth=3")); diff != "" {
		t.Errorf("list d depth 3 (-want +got):\n%s", diff)
	}

	var fi toolbox.FileInfo
	b.ok(200, &fi, "POST", "/v1/files/move", toolbox.MoveRequest{From: "d/x.txt", To: "n/m/x2.txt"})
	if fi.Path != "n/m/x2.txt" || fi.Size != 1 {
		t.Errorf("move returned %+v", fi)
	}
	b.ok(200, nil, "PUT", "/v1/files?path=other", "o")
	if r := b.do("POST", "/v1/files/move", toolbox.MoveRequest{From: "other", To: "n/m/x2.txt"}); r.status != 409 {
		t.Errorf("move onto an existing file without overwrite: %d %s", r.status, r.body)
	}
	b.ok(200, nil, "POST", "/v1/files/move", toolbox.MoveRequest{From: "other", To: "n/m/x2.txt", Overwrite: true})
	if data, _ := os.ReadFile(filepath.Join(b.ws, "n/m/x2.txt")); string(data) != "o" {
		t.Errorf("overwrite left %q", data)
	}

	b.ok(204, nil, "DELETE", "/v1/files?path=n/m/x2.txt", nil)
	b.ok(204, nil, "DELETE", "/v1/files?path=d&recursive=true", nil)
	if diff := cmp.Diff([]string{"n", "n/m"}, list("depth=5")); diff != "" {
		t.Errorf("after deletes (-want +got):\n%s", diff)
	}
}

func TestTarRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	src := filepath.Join(b.ws, "src")
	writeFile(t, filepath.Join(src, "a.txt"), "alpha")
	writeFile(t, filepath.Join(src, "deep", "er", "b.bin"), string(bytes.Repeat([]byte{0, 1, 2, 255}, 50000)))
	writeFile(t, filepath.Join(src, ".hidden"), "h")
	os.MkdirAll(filepath.Join(src, "empty"), 0o755)
	os.Chmod(filepath.Join(src, "a.txt"), 0o755)
	os.Symlink("a.txt", filepath.Join(src, "link"))
	writeFile(t, filepath.Join(src, "skip", "me.txt"), "excluded")

	r := b.ok(200, nil, "GET", "/v1/files/tar?path=src&exclude=skip", nil)
	if ct := r.header.Get("Content-Type"); ct != "application/x-tar" {
		t.Errorf("content type %q", ct)
	}
	tr := tar.NewReader(bytes.NewReader(r.body))
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	want := []string{".hidden", "a.txt", "deep/", "deep/er/", "deep/er/b.bin", "empty/", "link"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tar entries (-want +got):\n%s", diff)
	}

	var res toolbox.TarResult
	b.ok(200, &res, "PUT", "/v1/files/tar?path=copy", r.body)
	if res.Files != 3 || res.Dirs != 3 || res.Links != 1 {
		t.Errorf("upload result %+v", res)
	}
	os.RemoveAll(filepath.Join(src, "skip"))
	if diff := cmp.Diff(snapshot(t, src), snapshot(t, filepath.Join(b.ws, "copy"))); diff != "" {
		t.Errorf("round trip differs (-src +copy):\n%s", diff)
	}
	if fi, _ := os.Stat(filepath.Join(b.ws, "copy", "a.txt")); fi.Mode().Perm() != 0o755 {
		t.Errorf("mode not kept: %v", fi.Mode())
	}

	// A gzip-compressed upload works too, and a single file downloads as a
	// one-entry tar.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(r.body)
	zw.Close()
	b.ok(200, nil, "PUT", "/v1/files/tar?path=gz", gz.Bytes())
	if diff := cmp.Diff(snapshot(t, src), snapshot(t, filepath.Join(b.ws, "gz"))); diff != "" {
		t.Errorf("gzip round trip differs:\n%s", diff)
	}
	one := b.ok(200, nil, "GET", "/v1/files/tar?path="+url.QueryEscape("src/a.txt"), nil)
	tr = tar.NewReader(bytes.NewReader(one.body))
	h, err := tr.Next()
	if err != nil || h.Name != "a.txt" {
		t.Fatalf("single-file tar: %v %+v", err, h)
	}
	if data, _ := io.ReadAll(tr); string(data) != "alpha" {
		t.Errorf("single-file tar content %q", data)
	}
	if r := b.do("PUT", "/v1/files/tar?path=bad", "not a tar at all, not at all, no"); r.status != 400 {
		t.Errorf("garbage upload: %d %s", r.status, r.body)
	}
}
