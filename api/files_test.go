package api_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
	tbserver "github.com/drydockhq/drydock/toolbox/server"
	"github.com/google/go-cmp/cmp"
)

// escapeMarker is in every file a traversal might reach: its appearance in
// an answer is an escape.
const escapeMarker = "ESCAPED-FROM-WORKSPACE"

func listing(t *testing.T, data []byte) api.Listing {
	t.Helper()
	var l api.Listing
	if err := json.Unmarshal(data, &l); err != nil {
		t.Fatalf("listing: %v: %s", err, data)
	}
	return l
}

func names(l api.Listing) []string {
	var out []string
	for _, e := range l.Entries {
		out = append(out, e.Type+":"+e.Path)
	}
	return out
}

func archivedJob(t *testing.T) (*liveBundle, *drydock.Job) {
	t.Helper()
	b := setupLive(t, false, nil)
	j := b.runningJob(t, b.alice, `{"task": "x"}`, nil)
	b.finish(t, j.ID, drydock.StatusComplete, tarGz(t, []tarEntry{
		{name: "notes/", typ: tar.TypeDir},
		{name: "notes/a.md", typ: tar.TypeReg, body: "# A\n"},
		{name: "./README.md", typ: tar.TypeReg, body: "hello\n"},
		{name: "page.html", typ: tar.TypeReg, body: "<script>alert(1)</script>"},
		{name: "pic.png", typ: tar.TypeReg, body: "\x89PNG\r\n\x1a\n0000"},
		{name: "deep/er/x.txt", typ: tar.TypeReg, body: "x"}, // no directory entries
		{name: "big.bin", typ: tar.TypeReg, size: api.MaxViewBytes + 1},
		{name: "etc", typ: tar.TypeSymlink, link: "/etc"},
		{name: "up", typ: tar.TypeSymlink, link: "../../.."},
		{name: "../escape.txt", typ: tar.TypeReg, body: escapeMarker},
		{name: "/abs.txt", typ: tar.TypeReg, body: escapeMarker},
		{name: "a/../../b.txt", typ: tar.TypeReg, body: escapeMarker},
	}))
	return b, j
}

func TestFilesFromArchive(t *testing.T) {
	t.Parallel()
	b, j := archivedJob(t)
	files := "/v1/jobs/" + j.ID + "/files/"

	resp, data := b.get(t, files, b.alice)
	if resp.StatusCode != 200 {
		t.Fatalf("root: %d %s", resp.StatusCode, data)
	}
	l := listing(t, data)
	want := []string{"dir:deep", "dir:notes", "file:README.md", "file:big.bin", "symlink:etc", "file:page.html", "file:pic.png", "symlink:up"}
	if diff := cmp.Diff(want, names(l)); diff != "" || l.Source != "archive" || l.Path != "" {
		t.Errorf("root listing (-want +got):\n%s\n%+v", diff, l)
	}
	_, data = b.get(t, files+"deep", b.alice)
	if diff := cmp.Diff([]string{"dir:deep/er"}, names(listing(t, data))); diff != "" {
		t.Errorf("implicit directory (-want +got):\n%s", diff)
	}
	_, data = b.get(t, files+"notes/", b.alice)
	if l := listing(t, data); len(l.Entries) != 1 || l.Entries[0].Path != "notes/a.md" || l.Entries[0].Size != 4 {
		t.Errorf("notes: %+v", l)
	}

	resp, data = b.get(t, files+"notes/a.md", b.alice)
	if resp.StatusCode != 200 || string(data) != "# A\n" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/") {
		t.Errorf("a.md: %d %q %s", resp.StatusCode, data, resp.Header.Get("Content-Type"))
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox") {
		t.Errorf("file CSP %q", csp)
	}
	resp, _ = b.get(t, files+"page.html", b.alice)
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; charset=utf-8" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("HTML served as %q", ct)
	}
	resp, _ = b.get(t, files+"pic.png", b.alice)
	if ct := resp.Header.Get("Content-Type"); ct != "image/png" {
		t.Errorf("png served as %q", ct)
	}
	resp, data = b.get(t, files+"README.md?download=1", b.alice)
	if resp.StatusCode != 200 || string(data) != "hello\n" || resp.Header.Get("Content-Disposition") != `attachment; filename=README.md` {
		t.Errorf("download: %d %q %q", resp.StatusCode, data, resp.Header.Get("Content-Disposition"))
	}
	resp, data = b.get(t, files+"big.bin", b.alice)
	if resp.StatusCode != 413 || errorCode(t, data) != drydock.ETOOLARGE || !strings.Contains(string(data), "download=1") {
		t.Errorf("big file inline: %d %s", resp.StatusCode, data)
	}
	resp, data = b.get(t, files+"big.bin?download=1", b.alice)
	if resp.StatusCode != 200 || len(data) != api.MaxViewBytes+1 {
		t.Errorf("big file download: %d %d bytes", resp.StatusCode, len(data))
	}
	resp, data = b.get(t, files+"up", b.alice)
	if resp.StatusCode != 400 || !strings.Contains(string(data), "symbolic link") {
		t.Errorf("symlink: %d %s", resp.StatusCode, data)
	}
	for path, want := range map[string]int{"nope.txt": 404, "notes/nope": 404, "README.md?raw=1": 400} {
		if resp, data := b.get(t, files+path, b.alice); resp.StatusCode != want {
			t.Errorf("%s: %d %s, want %d", path, resp.StatusCode, data, want)
		}
	}
}

// traversals are spellings that try to leave the workspace.
var traversals = []string{
	"../escape.txt", "..%2fescape.txt", "%2e%2e/escape.txt", "%2e%2e%2fescape.txt", "notes/../../escape.txt",
	"notes%2f..%2f..%2fescape.txt", "/abs.txt", "%2fabs.txt", "//abs.txt", "abs.txt", "escape.txt", "b.txt",
	"a/../../b.txt", "etc/passwd", "etc%2fpasswd", "up/etc/passwd", "up/up/etc/passwd", "outside/secret.txt",
	"abs/passwd", "..", "%2e%2e", "notes/..%2f..%2f..%2fetc%2fpasswd", "..\\escape.txt", "notes/%00",
}

func checkNoEscape(t *testing.T, b *liveBundle, files string) {
	t.Helper()
	passwd, _ := os.ReadFile("/etc/passwd")
	firstLine, _, _ := bytes.Cut(passwd, []byte("\n"))
	for _, p := range traversals {
		resp, data := b.get(t, files+p, b.alice)
		escaped := bytes.Contains(data, []byte(escapeMarker)) || (len(firstLine) > 0 && bytes.Contains(data, firstLine))
		if escaped {
			t.Errorf("%s escaped the workspace: %d %s", p, resp.StatusCode, data)
		}
		if resp.StatusCode == 200 && resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: served a file: %s", p, data)
		}
		if resp.StatusCode >= 500 {
			t.Errorf("%s: %d %s", p, resp.StatusCode, data)
		}
	}
}

func TestFilesArchiveTraversal(t *testing.T) {
	t.Parallel()
	b, j := archivedJob(t)
	checkNoEscape(t, b, "/v1/jobs/"+j.ID+"/files/")
}

// liveWorkspace is a sandbox's workspace with a way out next to it.
func liveWorkspace(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(ws, "notes"), 0o755))
	must(os.WriteFile(filepath.Join(ws, "notes", "a.md"), []byte("# A live\n"), 0o644))
	must(os.WriteFile(filepath.Join(ws, "page.html"), []byte("<b>x</b>"), 0o644))
	must(os.WriteFile(filepath.Join(root, "escape.txt"), []byte(escapeMarker), 0o644))
	must(os.MkdirAll(filepath.Join(root, "outside"), 0o755))
	must(os.WriteFile(filepath.Join(root, "outside", "secret.txt"), []byte(escapeMarker), 0o644))
	must(os.Symlink(filepath.Join(root, "outside"), filepath.Join(ws, "outside")))
	must(os.Symlink("/etc", filepath.Join(ws, "abs")))
	must(os.Symlink("..", filepath.Join(ws, "up")))
	must(os.WriteFile(filepath.Join(ws, "big.bin"), make([]byte, api.MaxViewBytes+1), 0o644))
	return ws
}

func TestFilesFromLiveSandbox(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	sb := startToolbox(t, "sb-files", liveWorkspace(t), nil)
	j := b.runningJob(t, b.alice, `{"task": "x"}`, sb)
	files := "/v1/jobs/" + j.ID + "/files/"

	resp, data := b.get(t, files, b.alice)
	if resp.StatusCode != 200 {
		t.Fatalf("root: %d %s", resp.StatusCode, data)
	}
	l := listing(t, data)
	want := []string{"dir:notes", "symlink:abs", "file:big.bin", "symlink:outside", "file:page.html", "symlink:up"}
	if diff := cmp.Diff(want, names(l)); diff != "" || l.Source != "sandbox" {
		t.Errorf("live root (-want +got):\n%s\nsource %s", diff, l.Source)
	}
	resp, data = b.get(t, files+"notes/a.md", b.alice)
	if resp.StatusCode != 200 || string(data) != "# A live\n" {
		t.Errorf("live file: %d %q", resp.StatusCode, data)
	}
	resp, _ = b.get(t, files+"page.html", b.alice)
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
		t.Errorf("live HTML served as %q", ct)
	}
	resp, data = b.get(t, files+"big.bin?download=1", b.alice)
	if resp.StatusCode != 200 || len(data) != api.MaxViewBytes+1 {
		t.Errorf("live big download: %d %d", resp.StatusCode, len(data))
	}
	if resp, _ := b.get(t, files+"big.bin", b.alice); resp.StatusCode != 413 {
		t.Errorf("live big inline: %d", resp.StatusCode)
	}
	checkNoEscape(t, b, files)

	// Once the job ends its archive answers instead (here: none was made).
	b.finish(t, j.ID, drydock.StatusError, nil)
	if resp, data := b.get(t, files, b.alice); resp.StatusCode != 404 {
		t.Errorf("ended without archive: %d %s", resp.StatusCode, data)
	}
}

func TestFilesAccess(t *testing.T) {
	t.Parallel()
	b, j := archivedJob(t)
	files := "/v1/jobs/" + j.ID + "/files/"
	for _, c := range []struct {
		token string
		want  int
	}{{"", 401}, {"ddk_wrong", 401}, {b.bob, 404}, {b.alice, 200}, {b.admin, 200}} {
		if resp, data := b.get(t, files+"notes/a.md", c.token); resp.StatusCode != c.want {
			t.Errorf("token %q: %d %s, want %d", c.token, resp.StatusCode, data, c.want)
		}
	}
	pending := b.create(t, b.alice, `{"task": "later"}`)
	if resp, _ := b.get(t, "/v1/jobs/"+pending.ID+"/files/", b.alice); resp.StatusCode != 409 {
		t.Errorf("pending job: %d", resp.StatusCode)
	}
	// A running job on a server without sandbox access: 409, not a guess.
	nb := setupLive(t, false, func(c *api.Config) { c.Sandboxes = nil })
	rj := nb.runningJob(t, nb.alice, `{"task": "x"}`, nil)
	if resp, data := nb.get(t, "/v1/jobs/"+rj.ID+"/files/", nb.alice); resp.StatusCode != 409 {
		t.Errorf("running job without sandbox access: %d %s", resp.StatusCode, data)
	}
	_ = http.StatusOK
}

// vanishingToolbox is a real toolboxd whose tar download finds the file gone
// after its own stat, as happens when the agent removes a file while the
// API reads it: toolboxd then sends an empty archive.
type vanishingToolbox struct {
	http.Handler
	dir string
}

func (v vanishingToolbox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/files/tar" {
		os.Remove(filepath.Join(v.dir, r.URL.Query().Get("path")))
		w.Header().Set("Content-Type", "application/x-tar")
		tar.NewWriter(w).Close()
		return
	}
	v.Handler.ServeHTTP(w, r)
}

func TestLiveFileRemovedWhileReadIsNotFound(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gone.txt"), []byte("soon gone"), 0o644); err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "ddtb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	ln, err := net.Listen("unix", filepath.Join(sockDir, "tb.sock"))
	if err != nil {
		t.Fatal(err)
	}
	tb := tbserver.New(tbserver.Config{Workspace: dir, Token: "tb-vanish", StateDir: filepath.Join(sockDir, "state")}, nil)
	hs := &http.Server{Handler: vanishingToolbox{tb, dir}}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close(); tb.Close() })
	sb := &drydock.Sandbox{ID: "sb-vanish", Runtime: "test", State: drydock.SandboxRunning, Token: "tb-vanish",
		Endpoint: drydock.Endpoint{Network: "unix", Address: ln.Addr().String()}}
	j := b.runningJob(t, b.alice, `{"task": "x"}`, sb)

	resp, data := b.get(t, "/v1/jobs/"+j.ID+"/files/gone.txt", b.alice)
	if resp.StatusCode != http.StatusNotFound || errorCode(t, data) != "not_found" || !strings.Contains(string(data), "gone.txt") {
		t.Errorf("a file removed while read: %d %s, want 404 naming it", resp.StatusCode, data)
	}
}
