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
	"time"

	"github.com/drydockhq/drydock"
)

// ServerConfig configures the Jupyter server for people (the agent uses
// the kernel directly).
type ServerConfig struct {
	// Addr is the host:port to listen on; default 127.0.0.1:8888. Ignored
	// when Socket is set.
	Addr string
	// Socket, when set, is the unix socket the server listens on instead
	// of Addr (mode 0600): no port that code in the sandbox may want, or
	// may have taken already.
	Socket string
	// BaseURL is the path prefix the server is reached under (behind a
	// proxy) when StartServer is given none; default "/".
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
	if base, err := cleanBaseURL(c.BaseURL); err == nil {
		c.BaseURL = base
	} else {
		// Refused again, with the reason, by StartServer.
		c.BaseURL = "/" + strings.Trim(c.BaseURL, "/") + "/"
	}
	if c.Token == "" {
		b := make([]byte, 24)
		_, _ = rand.Read(b)
		c.Token = hex.EncodeToString(b)
	}
}

// cleanBaseURL normalizes a base URL to "/a/b/" and refuses anything but a
// plain path: it ends up on Jupyter's command line and in every URL of its
// pages.
func cleanBaseURL(base string) (string, error) {
	if base == "" || base == "/" {
		return "/", nil
	}
	trimmed := strings.Trim(base, "/")
	for seg := range strings.SplitSeq(trimmed, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", drydock.Errorf(drydock.EINVALID, "base URL %q must be a clean path such as /jobs/ID/jupyter/", base)
		}
		for _, r := range seg {
			ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~", r)
			if !ok {
				return "", drydock.Errorf(drydock.EINVALID, "base URL %q may hold only letters, digits, '/', '-', '.', '_' and '~'", base)
			}
		}
	}
	return "/" + trimmed + "/", nil
}

// server is the state of the Jupyter server for people: at most one run (a
// supervisor keeping one server process up under one base URL) at a time.
type server struct {
	mu    sync.Mutex
	asked bool       // StartServer has been called: Ready reports the server
	run   *serverRun // the latest run; nil before the first StartServer

	uiOnce sync.Once
	ui     bool // the classic notebook UI (nbclassic) is installed
}

// serverRun is one supervisor of the server process under one base URL.
// Its fields other than base, cancel and done change under server.mu.
type serverRun struct {
	base    string
	ready   bool
	readyCh chan struct{} // closed while the server answers
	failed  chan struct{} // closed when the supervisor gives up
	err     error         // why it gave up
	cancel  context.CancelFunc
	done    chan struct{} // closed when the supervisor has stopped its process
}

func (s *server) status() (ready, asked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.run != nil && s.run.ready, s.asked
}

func (s *server) stop() {
	s.mu.Lock()
	run := s.run
	s.mu.Unlock()
	if run != nil {
		run.cancel()
		<-run.done
	}
}

func (s *server) setReady(run *serverRun, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok == run.ready {
		return
	}
	run.ready = ok
	if ok {
		close(run.readyCh)
	} else {
		run.readyCh = make(chan struct{})
	}
}

// giveUp records why the server cannot start; the next StartServer tries
// again.
func (s *server) giveUp(run *serverRun, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	run.err = err
	close(run.failed)
}

func (r *serverRun) hasFailed() bool {
	select {
	case <-r.failed:
		return true
	default:
		return false
	}
}

// ServerURL is where the Jupyter server answers (or will answer) under its
// current base URL, e.g. http://127.0.0.1:8888/jupyter/. With a unix
// socket the host is "localhost": connect with DialServer.
func (k *Kernel) ServerURL() string {
	base := k.cfg.Server.BaseURL
	k.server.mu.Lock()
	if r := k.server.run; r != nil {
		base = r.base
	}
	k.server.mu.Unlock()
	return k.serverURL(base)
}

func (k *Kernel) serverURL(base string) string {
	if k.cfg.Server.Socket != "" {
		return "http://localhost" + base
	}
	return "http://" + k.cfg.Server.Addr + base
}

// DialServer connects to the Jupyter server's listening address (TCP or
// unix socket), for a client or proxy that speaks HTTP over it.
func (k *Kernel) DialServer(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	if sock := k.cfg.Server.Socket; sock != "" {
		return d.DialContext(ctx, "unix", sock)
	}
	return d.DialContext(ctx, "tcp", k.cfg.Server.Addr)
}

// ServerToken is the token the Jupyter server requires ("Authorization:
// token T" or ?token=T).
func (k *Kernel) ServerToken() string { return k.cfg.Server.Token }

// StartServer starts the Jupyter server on first use under baseURL (the
// configured one when empty), keeps it alive from then on, and waits until
// it answers or ctx ends. It is lazy because people rarely need it and it
// costs a Python process. Asked for another base URL than the running
// server's, it restarts the server under the new one, which ends the
// kernels people had started in it.
func (k *Kernel) StartServer(ctx context.Context, baseURL string) (string, error) {
	if baseURL == "" {
		baseURL = k.cfg.Server.BaseURL
	}
	base, err := cleanBaseURL(baseURL)
	if err != nil {
		return "", err
	}
	k.mu.Lock()
	closed, started := k.closed, k.started
	k.mu.Unlock()
	if closed || !started {
		return "", drydock.Errorf(drydock.EUNAVAILABLE, "kernel service is not running")
	}
	s := &k.server
	s.mu.Lock()
	s.asked = true
	run := s.run
	if run == nil || run.base != base || run.hasFailed() {
		prev := run
		if prev != nil {
			prev.cancel()
		}
		runCtx, cancel := context.WithCancel(context.Background())
		run = &serverRun{base: base, readyCh: make(chan struct{}), failed: make(chan struct{}),
			cancel: cancel, done: make(chan struct{})}
		s.run = run
		go func() {
			// The previous server must have let go of the address first.
			if prev != nil {
				<-prev.done
			}
			k.superviseServer(runCtx, run)
		}()
	}
	ready := run.readyCh
	s.mu.Unlock()
	select {
	case <-ready:
		return k.serverURL(base), nil
	case <-run.failed:
		s.mu.Lock()
		err := run.err
		s.mu.Unlock()
		return "", drydock.Errorf(drydock.EUNAVAILABLE, "jupyter server failed to start: %v", err)
	case <-run.done:
		return "", drydock.Errorf(drydock.EUNAVAILABLE, "jupyter server was restarted under another base URL or stopped")
	case <-ctx.Done():
		return "", drydock.Errorf(drydock.EUNAVAILABLE, "jupyter server is not ready yet")
	}
}

// serverAttempts is how many starts in a row may fail before the server is
// given up on (a missing module or a taken port will not fix itself).
const serverAttempts = 3

func (k *Kernel) superviseServer(ctx context.Context, run *serverRun) {
	s := &k.server
	defer close(run.done)
	log := k.log.With("process", "jupyter-server", "base_url", run.base)
	backoff := minBackoff
	failures := 0
	for ctx.Err() == nil {
		started := time.Now()
		wasReady, err := k.runServer(ctx, run, log)
		s.setReady(run, false)
		if ctx.Err() != nil {
			return
		}
		if wasReady {
			failures = 0
		} else if failures++; failures >= serverAttempts {
			log.Warn("jupyter server does not start; giving up until asked again", "err", err)
			s.giveUp(run, err)
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

// hasUI reports whether the classic notebook UI is installed. jupyter_server
// alone serves only the REST and WebSocket API; with nbclassic (Debian's
// python3-nbclassic enables it for every server) the base URL should lead
// to its file browser.
func (k *Kernel) hasUI() bool {
	s := &k.server
	s.uiOnce.Do(func() {
		s.ui = exec.Command(k.cfg.Python, "-c", "import nbclassic").Run() == nil
	})
	return s.ui
}

// runServer runs the server once, until it exits or ctx ends, and reports
// whether it ever answered.
func (k *Kernel) runServer(ctx context.Context, run *serverRun, log *slog.Logger) (wasReady bool, err error) {
	sc := k.cfg.Server
	runtimeDir := filepath.Join(k.cfg.RuntimeDir, "jupyter")
	if err := os.MkdirAll(runtimeDir, 0o700); err != nil {
		return false, err
	}
	args := []string{"-m", "jupyter_server", "--no-browser",
		"--ServerApp.base_url=" + run.base,
		// Requests arrive through toolboxd's proxy with the outside Host.
		"--ServerApp.allow_remote_access=True",
	}
	if sc.Socket != "" {
		if err := os.MkdirAll(filepath.Dir(sc.Socket), 0o700); err != nil {
			return false, err
		}
		args = append(args, "--ServerApp.sock="+sc.Socket, "--ServerApp.sock_mode=0600")
	} else {
		host, port, err := net.SplitHostPort(sc.Addr)
		if err != nil {
			return false, fmt.Errorf("jupyter server address %q: %w", sc.Addr, err)
		}
		args = append(args, "--ServerApp.ip="+host, "--ServerApp.port="+port, "--ServerApp.port_retries=0")
	}
	if k.hasUI() {
		args = append(args, "--ServerApp.default_url=/tree")
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
	if sc.Socket != "" {
		// Runs after p.stop: a server stopped by a signal leaves its socket.
		defer os.Remove(sc.Socket)
	}
	defer p.stop()

	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return k.DialServer(ctx) },
	}}
	defer client.CloseIdleConnections()
	statusURL := k.serverURL(run.base) + "api/status"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, statusURL, nil)
		req.Header.Set("Authorization", "token "+sc.Token)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				k.server.setReady(run, true)
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
		if p.err == nil {
			p.err = errors.New("exit status 0")
		}
		return true, fmt.Errorf("exited (%v): %s", p.err, out.lastLine())
	case <-ctx.Done():
		return true, ctx.Err()
	}
}
