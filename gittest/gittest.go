// Package gittest serves real git repositories over HTTP for tests: git
// http-backend (the host's git) behind net/http/cgi, with HTTP basic auth
// that checks a token, on a loopback address of the test's choice.
package gittest

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Server is a git HTTP server holding one repository, project.git.
type Server struct {
	// URL is the repository's clone URL.
	URL string
	// Dir is the bare repository on the host.
	Dir string
	// Commits maps "main", "feature/x" and "v1.0" to their commit ids.
	Commits map[string]string

	mu   sync.Mutex
	auth []string // the Authorization headers received
}

// Options configure New.
type Options struct {
	// Addr is where to listen (default 127.0.0.1:0). Sandboxes reach the
	// host through the egress proxy, which keeps the sandbox's own
	// 127.0.0.1 direct: use another loopback address such as 127.0.0.2.
	Addr string
	// Token, when set, is the password every request must carry (any
	// user name); without it the repository is public.
	Token string
}

// Require skips the test when the host has no git http-backend.
func Require(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skipf("git is not installed: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("git http-backend not found: %v", err)
	}
	return backend
}

// New builds the repository (main with README.md and src/app.py; branch
// feature/x with feature.txt; tag v1.0 on main's first commit) and serves
// it until the test ends.
func New(t testing.TB, o Options) *Server {
	t.Helper()
	backend := Require(t)
	root := t.TempDir()
	s := &Server{Dir: filepath.Join(root, "project.git"), Commits: map[string]string{}}
	work := filepath.Join(root, "work")
	run := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+root,
			"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
			"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(root, "init", "--quiet", "--bare", "--initial-branch=main", s.Dir)
	run(s.Dir, "config", "http.receivepack", "true")
	run(root, "init", "--quiet", "--initial-branch=main", work)
	write("README.md", "# project\n")
	run(work, "add", "-A")
	run(work, "commit", "--quiet", "-m", "first")
	run(work, "tag", "v1.0")
	s.Commits["v1.0"] = run(work, "rev-parse", "HEAD")
	write("src/app.py", "print('hello')\n")
	run(work, "add", "-A")
	run(work, "commit", "--quiet", "-m", "app")
	s.Commits["main"] = run(work, "rev-parse", "HEAD")
	run(work, "checkout", "--quiet", "-b", "feature/x")
	write("feature.txt", "feature\n")
	run(work, "add", "-A")
	run(work, "commit", "--quiet", "-m", "feature")
	s.Commits["feature/x"] = run(work, "rev-parse", "HEAD")
	run(work, "push", "--quiet", "--tags", s.Dir, "main", "feature/x")

	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + root}}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		s.mu.Unlock()
		if o.Token != "" {
			_, pass, ok := r.BasicAuth()
			if !ok || subtle.ConstantTimeCompare([]byte(pass), []byte(o.Token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		// Only Linux routes the whole of 127/8 to loopback.
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	srv := &http.Server{Handler: handler}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.URL = "http://" + ln.Addr().String() + "/project.git"
	return s
}

// Authorizations returns the Authorization headers the server received,
// in order.
func (s *Server) Authorizations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}
