package kernel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
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
	asked   bool
	readyCh chan struct{}
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
	if !s.asked {
		s.asked = true
		s.readyCh = make(chan struct{})
		runCtx, cancel := context.WithCancel(context.Background())
		s.cancel, s.done = cancel, make(chan struct{})
		go k.superviseServer(runCtx)
	}
	ch := s.readyCh
	s.mu.Unlock()
	select {
	case <-ch:
		return k.ServerURL(), nil
	case <-ctx.Done():
		return "", drydock.Errorf(drydock.EUNAVAILABLE, "jupyter server is not ready yet")
	}
}

func (k *Kernel) superviseServer(ctx context.Context) {
	s := &k.server
	defer close(s.done)
	log := k.log.With("process", "jupyter-server")
	backoff := minBackoff
	for ctx.Err() == nil {
		started := time.Now()
		err := k.runServer(ctx, log)
		s.setReady(false)
		if ctx.Err() != nil {
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

func (k *Kernel) runServer(ctx context.Context, log *slog.Logger) error {
	sc := k.cfg.Server
	host, port, err := net.SplitHostPort(sc.Addr)
	if err != nil {
		return fmt.Errorf("jupyter server address %q: %w", sc.Addr, err)
	}
	runtimeDir := filepath.Join(k.cfg.RuntimeDir, "jupyter")
	if err := os.MkdirAll(runtimeDir, 0o700); err != nil {
		return err
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
		return fmt.Errorf("start jupyter server: %w", err)
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
			return fmt.Errorf("exited before answering: %v", p.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	select {
	case <-p.exited:
		if p.err == nil {
			return errors.New("exited")
		}
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
