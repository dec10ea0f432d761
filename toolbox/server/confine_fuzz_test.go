package server

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drydockhq/drydock/toolbox"
)

// outsideMarker is in every file outside the fuzzed workspace.
const outsideMarker = "OUTSIDE-THE-WORKSPACE-7f3a"

// fuzzLayout (re)builds a workspace whose links lead out to a directory of
// marked files beside it.
func fuzzLayout(tb testing.TB, ws string) {
	tb.Helper()
	entries, err := os.ReadDir(ws)
	if err != nil {
		tb.Fatalf("the workspace root is gone: %v", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(ws, e.Name())); err != nil {
			tb.Fatal(err)
		}
	}
	outside := filepath.Join(filepath.Dir(ws), "outside")
	for p, body := range map[string]string{
		filepath.Join(ws, "inside.txt"):      "inside",
		filepath.Join(ws, "sub", "a.txt"):    "a",
		filepath.Join(outside, "secret.txt"): outsideMarker,
	} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"abslink": filepath.Join(outside, "secret.txt"), "rellink": "../outside/secret.txt",
		"dirlink": outside, "reldirlink": "../outside", "sub/up": "..", "etc": "/etc",
	} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			tb.Fatal(err)
		}
	}
}

// FuzzConfinedPath sends one path (and one tar entry name) through every
// file route of toolboxd over a workspace with links that lead out. Whatever
// they hold, nothing outside the workspace is read, written or removed, and
// no answer is a 5xx.
func FuzzConfinedPath(f *testing.F) {
	for _, s := range [][2]string{
		{"inside.txt", "f"}, {"..", "../x"}, {"../outside/secret.txt", "/tmp/x"}, {"sub/../../outside/secret.txt", "ok/../../x"},
		{"/etc/passwd", "dirlink/x"}, {"abslink", "reldirlink/x"}, {"dirlink/secret.txt", "sub/up/x"},
		{"reldirlink/new.txt", "etc/x"}, {"sub/up/rellink", "sub/up/outside/x"}, {"/", "./../x"}, {"etc/passwd", "dirlink/"},
		{"sub/up/sub/up/dirlink", "a/b/../../../x"}, {"./././..", "\\..\\x"}, {"sub//..//..", "x\x00y"},
	} {
		f.Add(s[0], s[1])
	}
	root := f.TempDir()
	ws := filepath.Join(root, "workspace")
	if err := os.Mkdir(ws, 0o755); err != nil {
		f.Fatal(err)
	}
	srv := New(Config{Workspace: ws, Token: testToken, StateDir: filepath.Join(root, "state")}, slog.New(slog.DiscardHandler))
	ts := httptest.NewServer(srv)
	f.Cleanup(func() { ts.Close(); srv.Close() })
	outside := filepath.Join(root, "outside")

	f.Fuzz(func(t *testing.T, p, entry string) {
		fuzzLayout(t, ws)
		q := url.QueryEscape(p)
		var tarBody bytes.Buffer
		tw := tar.NewWriter(&tarBody)
		if tw.WriteHeader(&tar.Header{Name: entry, Typeflag: tar.TypeReg, Mode: 0o644, Size: 5}) == nil {
			tw.Write([]byte("pwned"))
		}
		tw.Close()
		jsonBody := func(v any) []byte { b, _ := json.Marshal(v); return b }
		for _, c := range []struct {
			method, path string
			body         []byte
		}{
			{"GET", "/v1/files?path=" + q, nil},
			{"GET", "/v1/files?start_line=1&end_line=3&path=" + q, nil},
			{"GET", "/v1/files/stat?path=" + q, nil},
			{"GET", "/v1/files/list?depth=3&path=" + q, nil},
			{"GET", "/v1/files/tar?path=" + q, nil},
			{"PUT", "/v1/files?path=" + q, []byte("pwned")},
			{"POST", "/v1/files/mkdir", jsonBody(toolbox.MkdirRequest{Path: p})},
			{"PUT", "/v1/files/tar?path=" + q, tarBody.Bytes()},
			{"PUT", "/v1/files/tar?path=.", tarBody.Bytes()},
			{"POST", "/v1/files/move", jsonBody(toolbox.MoveRequest{From: "inside.txt", To: p, Overwrite: true})},
			{"POST", "/v1/files/move", jsonBody(toolbox.MoveRequest{From: p, To: "moved"})},
			{"DELETE", "/v1/files?recursive=true&path=" + q, nil},
		} {
			req, _ := http.NewRequest(c.method, ts.URL+c.path, bytes.NewReader(c.body))
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", c.method, c.path, err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if bytes.Contains(data, []byte(outsideMarker)) {
				t.Fatalf("%s %s read outside the workspace: %d %s", c.method, c.path, resp.StatusCode, data)
			}
			if resp.StatusCode >= 500 {
				t.Fatalf("%s %s (entry %q): %d %s", c.method, c.path, entry, resp.StatusCode, data)
			}
			got, err := os.ReadDir(outside)
			if err != nil || len(got) != 1 || got[0].Name() != "secret.txt" {
				t.Fatalf("%s %s (entry %q) changed the outside directory: %v %v", c.method, c.path, entry, got, err)
			}
			if data, err := os.ReadFile(filepath.Join(outside, "secret.txt")); err != nil || string(data) != outsideMarker {
				t.Fatalf("%s %s (entry %q) changed a file outside: %q %v", c.method, c.path, entry, data, err)
			}
		}
		// Nothing was written above the workspace either (the state
		// directory appears when a session starts; none does here).
		if es, _ := os.ReadDir(root); len(es) != 2 {
			var names []string
			for _, e := range es {
				names = append(names, e.Name())
			}
			t.Fatalf("path %q entry %q: the workspace's parent now holds %s", p, entry, strings.Join(names, ", "))
		}
	})
}
