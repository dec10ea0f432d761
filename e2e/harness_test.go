package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

var (
	binary  string
	nodeSeq atomic.Int64
)

func TestMain(m *testing.M) {
	binary = os.Getenv("DRYDOCK_TEST_BIN")
	if binary == "" {
		dir, err := os.MkdirTemp("", "drydock-e2e-bin")
		if err != nil {
			panic(err)
		}
		binary = filepath.Join(dir, "drydock")
		cmd := exec.Command("go", "build", "-o", binary, "../cmd/drydock")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: build drydock:", err)
			os.Exit(1)
		}
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// server is one drydock server process.
type server struct {
	t       *testing.T
	dataDir string
	addr    string
	args    []string
	node    string   // the server's --node-id
	env     []string // added to the environment
	cmd     *exec.Cmd
	logs    *syncBuffer
	done    chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// newServer prepares a server on a fresh data dir with the local runtime.
func newServer(t *testing.T, extra ...string) *server {
	t.Helper()
	s := &server{t: t, dataDir: dataDir(t), addr: freeAddr(t)}
	// A node id of its own: the default (host name and port) could repeat
	// when a port is reused, and servers sharing an engine reap each other's
	// sandboxes by node id.
	s.args = append([]string{"server", "--listen", s.addr, "--data-dir", s.dataDir, "--runtime", "local", "--agent", "fake", "--lease-ttl", "3s", "--log-level", "info",
		"--node-id", fmt.Sprintf("e2e-%d-%d", os.Getpid(), nodeSeq.Add(1))}, extra...)
	for i, a := range s.args {
		if a == "--node-id" && i+1 < len(s.args) {
			s.node = s.args[i+1] // the last one given wins
		}
	}
	return s
}

// dataDir is a temporary directory removed at the end of the test, retrying
// for a while: after a kill -9 the commands the local runtime started (a git
// taking the diff's baseline, say) live on in their own process groups and
// may still be writing into their sandbox for a moment, which makes
// t.TempDir's single RemoveAll fail with "directory not empty".
func dataDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "drydock-e2e-data")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var err error
		for range 50 {
			if err = os.RemoveAll(dir); err == nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Errorf("remove data dir: %v", err)
	})
	return dir
}

func (s *server) url() string { return "http://" + s.addr }

// start launches the process and waits until /readyz answers.
func (s *server) start() {
	s.t.Helper()
	s.logs = &syncBuffer{}
	s.cmd = exec.Command(binary, s.args...)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	// Sandboxes run under runc unless a test asks for gVisor (--isolation
	// gvisor, or DRYDOCK_ISOLATION in s.env): the suite's timings and
	// probes were written for runc, and the gVisor tests say so.
	s.cmd.Env = append(append(os.Environ(), "DRYDOCK_TOKEN=", "DRYDOCK_URL=", "DRYDOCK_ISOLATION=runc"), s.env...)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.done = make(chan error, 1)
	go func() { s.done <- s.cmd.Wait() }()
	s.t.Cleanup(s.kill)
	logs := s.logs
	s.t.Cleanup(func() {
		if s.t.Failed() {
			lines := strings.Split(logs.String(), "\n")
			s.t.Logf("last lines of the server's log:\n%s", strings.Join(lines[max(0, len(lines)-60):], "\n"))
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.done:
			s.t.Fatalf("server exited: %v\n%s", err, s.logs)
		default:
		}
		resp, err := http.Get(s.url() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("server not ready in 20s:\n%s", s.logs)
}

func (s *server) kill() {
	if s.cmd == nil || s.cmd.ProcessState != nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop() {
	s.t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Fatalf("server exit after SIGTERM: %v\n%s", err, s.logs)
		}
	case <-time.After(30 * time.Second):
		s.t.Fatalf("server did not stop within 30s of SIGTERM:\n%s", s.logs)
	}
}

func (s *server) do(method, path, token string, body string) (int, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, s.url()+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (s *server) schedule(body string) string {
	s.t.Helper()
	code, b := s.do("POST", "/schedule", "", body)
	if code != 201 {
		s.t.Fatalf("schedule: %d %s", code, b)
	}
	var r struct {
		JobID string `json:"job_id"`
	}
	json.Unmarshal(b, &r)
	return r.JobID
}

func (s *server) status(id string) *drydock.Job {
	s.t.Helper()
	code, b := s.do("GET", "/status/"+id, "", "")
	if code != 200 {
		s.t.Fatalf("status %s: %d %s", id, code, b)
	}
	var j drydock.Job
	if err := json.Unmarshal(b, &j); err != nil {
		s.t.Fatal(err)
	}
	return &j
}

// waitStatus polls until the job reaches a terminal status and returns the
// sequence of distinct statuses seen.
func (s *server) waitTerminal(id string, within time.Duration) (*drydock.Job, []drydock.JobStatus) {
	s.t.Helper()
	var seen []drydock.JobStatus
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		j := s.status(id)
		if len(seen) == 0 || seen[len(seen)-1] != j.Status {
			seen = append(seen, j.Status)
		}
		if j.Status.Terminal() {
			return j, seen
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("job %s not terminal within %s (seen %v)\n%s", id, within, seen, s.logs)
	return nil, nil
}

func (s *server) events(id string) []*drydock.Event {
	s.t.Helper()
	var all []*drydock.Event
	after := int64(0)
	for {
		code, b := s.do("GET", fmt.Sprintf("/v1/jobs/%s/events?after=%d&limit=1000", id, after), "", "")
		if code != 200 {
			s.t.Fatalf("events: %d %s", code, b)
		}
		var p struct {
			Events    []*drydock.Event `json:"events"`
			NextAfter int64            `json:"next_after"`
		}
		json.Unmarshal(b, &p)
		all = append(all, p.Events...)
		if len(p.Events) < 1000 {
			return all
		}
		after = p.NextAfter
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
