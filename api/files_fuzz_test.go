package api_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
)

// fuzzTraversals seed the path fuzzers; the committed corpus under
// testdata/fuzz holds the same spellings and what earlier runs found.
var fuzzTraversals = []string{
	"", "notes/a.md", "../escape.txt", "..%2fescape.txt", "%2e%2e/escape.txt", "notes/../../escape.txt",
	"/abs.txt", "%2fabs.txt", "//abs.txt", "up/etc/passwd", "up/up/etc/passwd", "outside/secret.txt",
	"abs/passwd", "..", "notes/..%2f..%2f..%2fetc%2fpasswd", "..\\escape.txt", "notes/%00", "a/../../b.txt",
	"./../escape.txt", "notes/./../..", "%252e%252e/escape.txt", "notes//..//..//escape.txt",
}

// escapeWorkspace is a live workspace whose symbolic links lead out of it
// to files holding escapeMarker, and an archive whose unsafe entries hold
// escapeMarker too.
func escapeWorkspace(tb testing.TB) string {
	tb.Helper()
	root := tb.TempDir()
	ws := filepath.Join(root, "ws")
	for p, body := range map[string]string{
		filepath.Join(ws, "notes", "a.md"):           "# A\n",
		filepath.Join(root, "escape.txt"):            escapeMarker,
		filepath.Join(root, "outside", "secret.txt"): escapeMarker,
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"outside": filepath.Join(root, "outside"), "abs": "/etc", "up": "..", "notes/esc": "../../escape.txt",
	} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			tb.Fatal(err)
		}
	}
	return ws
}

var unsafeArchive = []tarEntry{
	{name: "notes/a.md", typ: tar.TypeReg, body: "# A\n"},
	{name: "etc", typ: tar.TypeSymlink, link: "/etc"},
	{name: "up", typ: tar.TypeSymlink, link: "../../.."},
	{name: "../escape.txt", typ: tar.TypeReg, body: escapeMarker},
	{name: "/abs.txt", typ: tar.TypeReg, body: escapeMarker},
	{name: "a/../../b.txt", typ: tar.TypeReg, body: escapeMarker},
	{name: "./../c.txt", typ: tar.TypeReg, body: escapeMarker},
}

// escaped reports whether an answer shows a file from outside the
// workspace: the marker, or the host's /etc/passwd.
func escaped(data []byte) bool {
	passwd, _ := os.ReadFile("/etc/passwd")
	first, _, _ := bytes.Cut(passwd, []byte("\n"))
	return bytes.Contains(data, []byte(escapeMarker)) || (len(first) > 0 && bytes.Contains(data, first))
}

// FuzzFilesPath: whatever follows /v1/jobs/{id}/files/, for a running job
// (read live through a real toolboxd) and an archived one, the answer never
// holds a file from outside the workspace and is never a 5xx.
func FuzzFilesPath(f *testing.F) {
	for _, p := range fuzzTraversals {
		f.Add(p)
	}
	b := setupLive(f, false, nil)
	sb := startToolbox(f, "sb-fuzz", escapeWorkspace(f), nil)
	running := b.runningJob(f, b.alice, `{"task": "x"}`, sb)
	archived := b.runningJob(f, b.alice, `{"task": "y"}`, nil)
	b.finish(f, archived.ID, drydock.StatusComplete, tarGz(f, unsafeArchive))
	f.Fuzz(func(t *testing.T, p string) {
		for _, j := range []*drydock.Job{running, archived} {
			u, err := url.Parse(b.url + "/v1/jobs/" + j.ID + "/files/" + p)
			if err != nil || u.Host != strings.TrimPrefix(b.url, "http://") {
				return // not a URL a client could send
			}
			for _, q := range []string{"", "download=1"} {
				u.RawQuery = q
				req, _ := http.NewRequest("GET", u.String(), nil)
				req.Header.Set("Authorization", "Bearer "+b.alice)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return // e.g. a redirect loop the client gives up on
				}
				var body bytes.Buffer
				body.ReadFrom(resp.Body)
				resp.Body.Close()
				if escaped(body.Bytes()) {
					t.Fatalf("%s (%s) escaped the workspace: %d %s", p, j.Status, resp.StatusCode, body.Bytes())
				}
				if resp.StatusCode >= 500 {
					t.Fatalf("%s (%s): %d %s", p, j.Status, resp.StatusCode, body.Bytes())
				}
			}
		}
	})
}

// FuzzArchiveEntryName: an archive entry may be named anything (a sandbox
// writes the tar); an entry whose name leaves the workspace never shows in
// a listing, is never served as a file and never becomes a zip entry.
func FuzzArchiveEntryName(f *testing.F) {
	for _, p := range append(fuzzTraversals, "ok.txt", "./ok.txt", "dir/../ok.txt", "a\x00b", "../../../../tmp/x") {
		f.Add(p)
	}
	b := setupLive(f, false, nil)
	j := b.runningJob(f, b.alice, `{"task": "x"}`, nil)
	b.finish(f, j.ID, drydock.StatusComplete, tarGz(f, []tarEntry{{name: "keep.txt", typ: tar.TypeReg, body: "keep"}}))
	stored, err := b.store.GetJob(f.Context(), j.ID)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name string) {
		unsafe := leavesWorkspace(name)
		// Overwrite the job's stored archive: one job serves every input.
		archive, ok := tarGzNamed(name)
		if !ok {
			return // archive/tar cannot write the name; no sandbox can either
		}
		if _, err := b.artifacts.Put(t.Context(), stored.ArtifactKey, bytes.NewReader(archive)); err != nil {
			t.Fatal(err)
		}
		resp, data := b.get(t, "/v1/jobs/"+j.ID+"/artifact.zip", b.alice)
		if resp.StatusCode != 200 {
			t.Fatalf("zip of an archive with entry %q: %d %s", name, resp.StatusCode, data)
		}
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("zip of an archive with entry %q does not read: %v", name, err)
		}
		for _, zf := range zr.File {
			if leavesWorkspace(zf.Name) || strings.HasPrefix(zf.Name, "/") {
				t.Fatalf("entry %q became zip entry %q", name, zf.Name)
			}
		}
		if unsafe && len(zr.File) != 1 {
			t.Fatalf("unsafe entry %q kept in the zip: %d entries", name, len(zr.File))
		}
		resp, data = b.get(t, "/v1/jobs/"+j.ID+"/files/", b.alice)
		if resp.StatusCode != 200 {
			t.Fatalf("listing with entry %q: %d %s", name, resp.StatusCode, data)
		}
		for _, e := range listing(t, data).Entries {
			if leavesWorkspace(e.Path) {
				t.Fatalf("entry %q listed as %q", name, e.Path)
			}
		}
		if !unsafe {
			return
		}
		// Every spelling a client might try for the unsafe name.
		for _, p := range []string{name, strings.TrimPrefix(path.Clean("/"+name), "/"), path.Base(name)} {
			resp, data := b.get(t, "/v1/jobs/"+j.ID+"/files/"+url.PathEscape(p), b.alice)
			if bytes.Contains(data, []byte(escapeMarker)) {
				t.Fatalf("unsafe entry %q served as %q: %d", name, p, resp.StatusCode)
			}
		}
	})
}

// tarGzNamed is keep.txt plus an entry called name holding escapeMarker.
func tarGzNamed(name string) ([]byte, bool) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range []struct{ name, body string }{{"keep.txt", "keep"}, {name, escapeMarker}} {
		if tw.WriteHeader(&tar.Header{Name: e.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(e.body))}) != nil {
			return nil, false
		}
		tw.Write([]byte(e.body))
	}
	if tw.Close() != nil || gz.Close() != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

// leavesWorkspace is the independent statement of what the server must
// refuse: an absolute name, a NUL byte, or a name that, once resolved
// lexically, climbs above the root.
func leavesWorkspace(name string) bool {
	n := strings.TrimPrefix(name, "./")
	if strings.HasPrefix(n, "/") || strings.ContainsRune(n, 0) {
		return true
	}
	c := path.Clean(n)
	return c == ".." || strings.HasPrefix(c, "../")
}
