package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// server is a `drydock server` process started for a measure, with its own
// data directory on a free loopback port.
type server struct {
	URL string
	cmd *exec.Cmd
	dir string
	log string

	exited chan struct{}
}

// startServer runs bin as a server with args added to its own listen
// address and data directory, and waits until it answers /readyz.
func startServer(ctx context.Context, bin string, args ...string) (*server, error) {
	dir, err := os.MkdirTemp("", "dd-bench-server-")
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	logPath := filepath.Join(dir, "server.log")
	logf, err := os.Create(logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer logf.Close()
	all := append([]string{"server", "--listen", addr, "--data-dir", filepath.Join(dir, "data"), "--log-level", "warn"}, args...)
	cmd := exec.Command(bin, all...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a Ctrl-C at the terminal reaches the bench,
	// which then stops the server in order (its sandboxes included).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s server: %w", bin, err)
	}
	s := &server{URL: "http://" + addr, cmd: cmd, dir: dir, log: logPath}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			tail := s.logTail()
			os.RemoveAll(dir)
			return nil, fmt.Errorf("server %s %s exited at start: %s", bin, strings.Join(args, " "), tail)
		case <-ctx.Done():
			s.stop(exited)
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if resp, err := http.Get(s.URL + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				s.exited = exited
				return s, nil
			}
		}
	}
	s.stop(exited)
	return nil, fmt.Errorf("server %s did not become ready within a minute", bin)
}

// stop ends the server with SIGTERM (it drains and the runner's sandboxes
// go with its jobs), killing it after 30 s, and removes its data.
func (s *server) Stop() { s.stop(s.exited) }

func (s *server) stop(exited chan struct{}) {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-exited
	}
	os.RemoveAll(s.dir)
}

func (s *server) logTail() string {
	b, _ := os.ReadFile(s.log)
	b = bytes.TrimSpace(b)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// serverHasFlag reports whether bin's server command knows flag (as
// --flag in its help).
func serverHasFlag(bin, flag string) bool {
	out, _ := exec.Command(bin, "server", "--help").CombinedOutput()
	return bytes.Contains(out, []byte("--"+flag))
}
