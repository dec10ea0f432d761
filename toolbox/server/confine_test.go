package server

import (
	"archive/tar"
	"bytes"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drydockhq/drydock/toolbox"
)

// escapeLayout builds a workspace with symbolic links that lead out of it,
// next to a directory "outside" that no request may touch.
func escapeLayout(t *testing.T, b *bundle) (outside string) {
	t.Helper()
	outside = filepath.Join(filepath.Dir(b.ws), "outside")
	writeFile(t, filepath.Join(outside, "secret.txt"), "secret")
	writeFile(t, filepath.Join(b.ws, "inside.txt"), "inside")
	writeFile(t, filepath.Join(b.ws, "sub", "a.txt"), "a")
	for link, target := range map[string]string{
		"abslink":    filepath.Join(outside, "secret.txt"),
		"rellink":    "../outside/secret.txt",
		"dirlink":    outside,
		"reldirlink": "../outside",
		"good":       "inside.txt",
		"sub/up":     "..",
	} {
		if err := os.Symlink(target, filepath.Join(b.ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	return outside
}

// snapshot lists a tree with its file contents.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "-> " + target
		case fi.IsDir():
			out[rel] = "dir"
		default:
			data, _ := os.ReadFile(p)
			out[rel] = string(data)
		}
		return nil
	})
	return out
}

func tarOf(t *testing.T, entries ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len("pwned"))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte("pwned"))
		}
	}
	tw.Close()
	return buf.Bytes()
}

func TestPathConfinement(t *testing.T) {
	t.Parallel()
	b := setup(t)
	outside := escapeLayout(t, b)
	before := snapshot(t, outside)
	wsBefore := snapshot(t, b.ws)

	// Paths that lead out lexically, by absolute name, or through a link at
	// the last component or at a parent.
	escapes := []string{
		"..",
		"../outside/secret.txt",
		"sub/../../outside/secret.txt",
		filepath.Join(outside, "secret.txt"),
		"/etc/passwd",
		"abslink",
		"rellink",
		"dirlink/secret.txt",
		"reldirlink/secret.txt",
		"reldirlink/new.txt",
		"sub/up/rellink",
	}
	// The last component of these is a link; stat, delete and move act on the
	// link itself, which lies inside, so they are not escapes for those routes.
	finalLink := map[string]bool{"abslink": true, "rellink": true, "sub/up/rellink": true}
	dirEscapes := []string{"..", "../outside", outside, "/", "/etc", "dirlink", "reldirlink", "sub/up/dirlink"}

	type tc struct {
		name   string
		method string
		path   string
		body   any
	}
	var cases []tc
	q := url.QueryEscape
	for _, p := range escapes {
		cases = append(cases,
			tc{"read " + p, "GET", "/v1/files?path=" + q(p), nil},
			tc{"read lines " + p, "GET", "/v1/files?start_line=1&end_line=2&path=" + q(p), nil},
			tc{"write " + p, "PUT", "/v1/files?path=" + q(p), "pwned"},
			tc{"write mode " + p, "PUT", "/v1/files?mode=0777&path=" + q(p), "pwned"},
			tc{"mkdir " + p, "POST", "/v1/files/mkdir", toolbox.MkdirRequest{Path: p + "/newdir"}},
			tc{"download tar " + p, "GET", "/v1/files/tar?path=" + q(p), nil},
			tc{"upload tar into " + p, "PUT", "/v1/files/tar?path=" + q(p+"/x"), tarOf(t, &tar.Header{Name: "f", Typeflag: tar.TypeReg})},
		)
		if !finalLink[p] {
			cases = append(cases,
				tc{"stat " + p, "GET", "/v1/files/stat?path=" + q(p), nil},
				tc{"delete " + p, "DELETE", "/v1/files?recursive=true&path=" + q(p), nil},
				tc{"move from " + p, "POST", "/v1/files/move", toolbox.MoveRequest{From: p, To: "moved.txt"}},
				tc{"move to " + p, "POST", "/v1/files/move", toolbox.MoveRequest{From: "inside.txt", To: p, Overwrite: true}},
			)
		}
	}
	for _, d := range dirEscapes {
		cases = append(cases,
			tc{"list " + d, "GET", "/v1/files/list?path=" + q(d), nil},
			tc{"list deep " + d, "GET", "/v1/files/list?depth=5&path=" + q(d), nil},
			tc{"download tar dir " + d, "GET", "/v1/files/tar?path=" + q(d), nil},
			tc{"upload tar dir " + d, "PUT", "/v1/files/tar?path=" + q(d), tarOf(t, &tar.Header{Name: "pwned.txt", Typeflag: tar.TypeReg})},
			tc{"session cwd " + d, "POST", "/v1/sessions", toolbox.SessionRequest{Cwd: d}},
			tc{"exec cwd " + d, "POST", "/v1/exec", toolbox.ExecRequest{Command: "echo pwned > pwned.txt", Cwd: d}},
		)
	}
	// Tar entries that lead out of the directory they are unpacked in.
	for _, h := range []*tar.Header{
		{Name: "../outside/evil.txt", Typeflag: tar.TypeReg},
		{Name: "../../evil.txt", Typeflag: tar.TypeReg},
		{Name: "/tmp/evil.txt", Typeflag: tar.TypeReg},
		{Name: "ok/../../outside/evil.txt", Typeflag: tar.TypeReg},
		{Name: "dirlink/evil.txt", Typeflag: tar.TypeReg},
		{Name: "reldirlink/evil.txt", Typeflag: tar.TypeReg},
		{Name: "dirlink/newdir/", Typeflag: tar.TypeDir},
		{Name: "hard", Typeflag: tar.TypeLink, Linkname: "../outside/secret.txt"},
		{Name: "hard2", Typeflag: tar.TypeLink, Linkname: "dirlink/secret.txt"},
	} {
		cases = append(cases, tc{"tar entry " + h.Name, "PUT", "/v1/files/tar?path=.", tarOf(t, h)})
	}
	// Unpacking into a subdirectory must stay inside it too.
	cases = append(cases, tc{"tar entry leaves subdir", "PUT", "/v1/files/tar?path=sub",
		tarOf(t, &tar.Header{Name: "../inside.txt", Typeflag: tar.TypeReg})})

	for _, c := range cases {
		r := b.do(c.method, c.path, c.body)
		if r.status != http.StatusForbidden || r.errCode() != "forbidden" {
			t.Errorf("%s: status %d, body %s; want 403 forbidden", c.name, r.status, r.body)
		}
	}
	if diff := cmp.Diff(before, snapshot(t, outside)); diff != "" {
		t.Errorf("outside directory changed (-before +after):\n%s", diff)
	}
	wsAfter := snapshot(t, b.ws)
	if diff := cmp.Diff(wsBefore, wsAfter); diff != "" {
		t.Errorf("workspace changed by refused requests (-before +after):\n%s", diff)
	}
}

func TestPathsInsideAreAllowed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	escapeLayout(t, b)
	for _, p := range []string{
		"inside.txt",
		"./inside.txt",
		"sub/../inside.txt",
		filepath.Join(b.ws, "inside.txt"),
		filepath.Join(b.ws, "sub", "..", "inside.txt"),
		"good",        // a link that stays inside
		"sub/up/good", // through a link to the parent that stays inside
		"sub/up/inside.txt",
	} {
		r := b.do("GET", "/v1/files?path="+url.QueryEscape(p), nil)
		if r.status != http.StatusOK || string(r.body) != "inside" {
			t.Errorf("read %q: status %d, body %q; want 200 inside", p, r.status, r.body)
		}
	}
	// Stat and delete of a link that points out act on the link itself.
	var fi toolbox.FileInfo
	b.ok(http.StatusOK, &fi, "GET", "/v1/files/stat?path=abslink", nil)
	if fi.Type != toolbox.TypeSymlink || fi.LinkTarget == "" {
		t.Errorf("stat abslink = %+v; want a symlink with its target", fi)
	}
	b.ok(http.StatusNoContent, nil, "DELETE", "/v1/files?path=abslink", nil)
	if _, err := os.Lstat(filepath.Join(b.ws, "abslink")); !os.IsNotExist(err) {
		t.Errorf("abslink still there after delete: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(b.ws), "outside", "secret.txt")); err != nil {
		t.Errorf("deleting the link removed its target: %v", err)
	}
	// The root's listing shows links as links and does not descend them.
	var ls toolbox.ListResult
	b.ok(http.StatusOK, &ls, "GET", "/v1/files/list?depth=3&path="+url.QueryEscape(b.ws), nil)
	var names []string
	for _, e := range ls.Entries {
		names = append(names, e.Path+":"+e.Type)
	}
	sort.Strings(names)
	want := []string{"dirlink:symlink", "good:symlink", "inside.txt:file", "reldirlink:symlink",
		"rellink:symlink", "sub/a.txt:file", "sub/up:symlink", "sub:dir"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("listing (-want +got):\n%s", diff)
	}
}
