package api_test

import (
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/drydockhq/drydock"
)

// traversalSuffixes try to climb out of a route's prefix: plain, encoded,
// double-encoded, with backslashes and NUL bytes.
var traversalSuffixes = []string{
	"../../../v1/files?path=/etc/passwd", "..%2f..%2f..%2fv1%2ffiles", "%2e%2e/%2e%2e/%2e%2e/v1/exec",
	"a/../../../../v1/sessions", "..%252f..%252fv1%252ffiles", "..\\..\\v1\\files", "%2e%2e%5c%2e%2e%5cv1",
	"./../../x", "api/..%2f..%2f..%2f..%2f..%2fv1%2fclaim", "%00/../../v1/files", "/%2e%2e/%2e%2e/v1/info",
}

// toolboxRecorder stands in for a sandbox's toolboxd and records the path
// of every request it gets, whatever the route.
type toolboxRecorder struct {
	mu    sync.Mutex
	paths []string
}

func (tr *toolboxRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tr.mu.Lock()
	tr.paths = append(tr.paths, r.URL.Path)
	tr.mu.Unlock()
	io.WriteString(w, `{"ready": true}`)
}

func startToolboxRecorder(t *testing.T, id string) (*toolboxRecorder, *drydock.Sandbox) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ddrec")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "tb.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	tr := &toolboxRecorder{}
	hs := &http.Server{Handler: tr}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return tr, &drydock.Sandbox{ID: id, State: drydock.SandboxRunning, Token: "tb-" + id, Endpoint: drydock.Endpoint{Network: "unix", Address: sock}}
}

// The Jupyter proxy forwards only below the job's Jupyter base: no spelling
// of a path under /jobs/{id}/jupyter/ reaches another toolboxd route (files,
// processes, the claim) or another job's Jupyter.
func TestJupyterProxyTraversal(t *testing.T) {
	t.Parallel()
	b := setupLive(t, false, nil)
	rec, sb := startToolboxRecorder(t, "sb-trav")
	j := b.runningJob(t, b.alice, `{"task": "x"}`, sb)
	base := "/jobs/" + j.ID + "/jupyter/"
	for _, suffix := range traversalSuffixes {
		for _, method := range []string{"GET", "POST", "DELETE"} {
			req, err := http.NewRequest(method, b.url+base+suffix, nil)
			if err != nil {
				continue
			}
			req.Header.Set("Authorization", "Bearer "+b.alice)
			resp, err := noRedirect.Do(req)
			if err != nil {
				continue
			}
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				t.Errorf("%s %s: %d", method, suffix, resp.StatusCode)
			}
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	proxied := 0
	for _, p := range rec.paths {
		if p == "/v1/jupyter/start" {
			continue
		}
		proxied++
		want := "/v1/jupyter/proxy" + base
		if !strings.HasPrefix(path.Clean(p)+"/", want) || !strings.HasPrefix(p, want) {
			t.Errorf("the sandbox got %q, outside %s", p, want)
		}
	}
	if proxied == 0 {
		t.Fatal("no request reached the sandbox: the test shows nothing")
	}
}

// UI assets come from the binary's embedded files only: no spelling under
// /ui/ serves a source file or a host file.
func TestUIAssetTraversal(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	for _, p := range []string{
		"../go.mod", "..%2fgo.mod", "%2e%2e/web.go", "../../etc/passwd", "..%2f..%2f..%2fetc%2fpasswd", "static/../web.go",
		"/etc/passwd", "%2fetc%2fpasswd", "..\\web.go", "index.html", "desktop.html", "novnc/../../web.go", "./app.js/..",
	} {
		req, _ := http.NewRequest("GET", b.url+"/ui/"+p, nil)
		resp, err := noRedirect.Do(req)
		if err != nil {
			continue
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 || escaped(data) || strings.Contains(string(data), "package web") || strings.Contains(string(data), "module github.com") {
			t.Errorf("/ui/%s: %d %.80q", p, resp.StatusCode, data)
		}
	}
	if resp, _ := b.do(t, "GET", "/ui/app.js", "", ""); resp.StatusCode != 200 {
		t.Errorf("a real asset: %d", resp.StatusCode)
	}
}
