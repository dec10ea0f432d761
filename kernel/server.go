package kernel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drydockhq/drydock"
)

// ServerConfig configures the Jupyter server for people (the agent uses
// the kernel directly).
type ServerConfig struct {
	// Addr is the host:port to listen on; default 127.0.0.1:8888.
	Addr string
	// BaseURL is the path prefix the server is reached under (behind a
	// proxy); default "/".
	BaseURL string
	// Token authenticates requests; default: random, see ServerToken.
	Token string
	// Args are extra command-line arguments (--ServerApp.x=y).
	Args []string
}

func (c *ServerConfig) setDefaults() {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8888"
	}
	if c.BaseURL == "" {
		c.BaseURL = "/"
	}
	if !strings.HasPrefix(c.BaseURL, "/") {
		c.BaseURL = "/" + c.BaseURL
	}
	if !strings.HasSuffix(c.BaseURL, "/") {
		c.BaseURL += "/"
	}
	if c.Token == "" {
		b := make([]byte, 24)
		_, _ = rand.Read(b)
		c.Token = hex.EncodeToString(b)
	}
}

type server struct {
	mu      sync.Mutex
	asked   bool // StartServer has been called: Ready reports the server
	running bool // a supervisor is trying to keep it up
	readyCh chan struct{}
	failCh  chan struct{} // closed when the supervisor gives up
	err     error
	cancel  context.CancelFunc
	done    chan struct{}
	ready   atomic.Bool
}

func (s *server) status() (ready, asked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready.Load(), s.asked
}

func (s *server) stop() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (s *server) setReady(ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok == s.ready.Load() {
		return
	}
	s.ready.Store(ok)
	if ok {
		close(s.readyCh)
	} else {
		s.readyCh = make(chan struct{})
	}
}

// giveUp records why the server cannot start; the next StartServer tries
// again.
func (s *server) giveUp(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running, s.err = false, err
	close(s.failCh)
}

// ServerURL is where the Jupyter server answers once started, e.g.
// http://127.0.0.1:8888/jupyter/.
func (k *Kernel) ServerURL() string { return "http://" + k.cfg.Server.Addr + k.cfg.Server.BaseURL }

// ServerToken is the token the Jupyter server requires ("Authorization:
// token T" or ?token=T).
func (k *Kernel) ServerToken() string { return k.cfg.Server.Token }

// StartServer starts the Jupyter server on first use, keeps it alive from
// then on, and waits until it answers. It is lazy because people rarely
// need it and it costs a Python process.
func (k *Kernel) StartServer(ctx context.Context) (string, error) {
	k.mu.Lock()
	closed, started := k.closed, k.started
	k.mu.Unlock()
	if closed || !started {
		return "", drydock.Errorf(drydock.EUNAVAILABLE, "kernel service is not running")
	}
	s := &k.server
	s.mu.Lock()
	s.asked = true
	if !s.running {
		s.running = true
		s.readyCh, s.failCh = make(chan struct{}), make(chan struct{})
		runCtx, cancel := context.WithCancel(context.Background())
		s.cancel, s.done = cancel, make(chan struct{})
		go k.superviseServer(runCtx, s.done)
	}
	ready, failed := s.readyCh, s.failCh
	s.mu.Unlock()
	select {
	case <-ready:
		return k.ServerURL(), nil
	case <-failed:
		s.mu.Lock()
		err := s.err
		s.mu.Unlock()
		return "", drydock.Errorf(drydock.EUNAVAILABLE, "jupyter server failed to start: %v", err)
	case <-ctx.Done():
		return "", drydock.Errorf(drydock.EUNAVAILABLE, "jupyter server is not ready yet")
	}
}

// serverAttempts is how many starts in a row may fail before the server is
// given up on (a missing module or a taken port will not fix itself).
const serverAttempts = 3

func (k *Kernel) superviseServer(ctx context.Context, done chan struct{}) {
	s := &k.server
	defer close(done)
	log := k.log.With("process", "jupyter-server")
	backoff := minBackoff
	failures := 0
	for ctx.Err() == nil {
		started := time.Now()
		wasReady, err := k.runServer(ctx, log)
		s.setReady(false)
		if ctx.Err() != nil {
			return
		}
		if wasReady {
			failures = 0
		} else if failures++; failures >= serverAttempts {
			log.Warn("jupyter server does not start; giving up until asked again", "err", err)
			s.giveUp(err)
			return
		}
		if time.Since(started) > stableAfter {
			backoff = minBackoff
		}
		log.Warn("jupyter server stopped; restarting", "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// runServer runs the server once, until it exits or ctx ends, and reports
// whether it ever answered.
func (k *Kernel) runServer(ctx context.Context, log *slog.Logger) (wasReady bool, err error) {
	sc := k.cfg.Server
	host, port, err := net.SplitHostPort(sc.Addr)
	if err != nil {
		return false, fmt.Errorf("jupyter server address %q: %w", sc.Addr, err)
	}
	runtimeDir := filepath.Join(k.cfg.RuntimeDir, "jupyter")
	if err := os.MkdirAll(runtimeDir, 0o700); err != nil {
		return false, err
	}
	args := []string{"-m", "jupyter_server", "--no-browser",
		"--ServerApp.ip=" + host, "--ServerApp.port=" + port, "--ServerApp.port_retries=0",
		"--ServerApp.base_url=" + sc.BaseURL,
		// Requests arrive through toolboxd's proxy with the outside Host.
		"--ServerApp.allow_remote_access=True",
	}
	if k.cfg.Dir != "" {
		args = append(args, "--ServerApp.root_dir="+k.cfg.Dir)
	}
	if os.Geteuid() == 0 {
		args = append(args, "--allow-root")
	}
	args = append(args, sc.Args...)
	cmd := exec.Command(k.cfg.Python, args...)
	cmd.Dir = k.cfg.Dir
	// The token goes in the environment, not argv, where ps would show it;
	// the runtime files (which hold it too) stay in the private directory.
	cmd.Env = append(k.env(), "JUPYTER_TOKEN="+sc.Token, "JUPYTER_RUNTIME_DIR="+runtimeDir)
	out := &lineLogger{log: log, level: slog.LevelDebug}
	cmd.Stdout, cmd.Stderr = out, out
	p, err := startProc(cmd)
	if err != nil {
		return false, fmt.Errorf("start jupyter server: %w", err)
	}
	defer p.stop()

	client := &http.Client{Timeout: 2 * time.Second}
	statusURL := k.ServerURL() + "api/status"
	for !k.server.ready.Load() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, statusURL, nil)
		req.Header.Set("Authorization", "token "+sc.Token)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				k.server.setReady(true)
				log.Info("jupyter server ready", "pid", p.cmd.Process.Pid)
				break
			}
		}
		select {
		case <-p.exited:
			return false, fmt.Errorf("exited before answering (%v): %s", p.err, out.lastLine())
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	select {
	case <-p.exited:
		return true, fmt.Errorf("exited (%v): %s", p.err, out.lastLine())
	case <-ctx.Done():
		return true, ctx.Err()
	}
}
