package e2e_test

import (
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// killProxy forwards TCP connections to a server. On the first connection
// on which the server starts to answer, it kills the server (kill -9)
// before a byte of the answer is passed on, and closes the client's side:
// the API answers a creation only after its commit, so this is a server
// killed right after committing a job whose client never hears of it.
// Later connections are forwarded as they are (to nothing while the server
// is down, so the client's connection closes at once).
type killProxy struct {
	ln     net.Listener
	target string
	kill   func()
	once   sync.Once
	killed chan struct{}
}

func startKillProxy(t *testing.T, target string, kill func()) *killProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &killProxy{ln: ln, target: target, kill: kill, killed: make(chan struct{})}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.relay(c)
		}
	}()
	return p
}

func (p *killProxy) url() string { return "http://" + p.ln.Addr().String() }

func (p *killProxy) relay(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	go func() {
		io.Copy(up, c)
		up.(*net.TCPConn).CloseWrite()
	}()
	buf := make([]byte, 32<<10)
	for first := true; ; first = false {
		n, err := up.Read(buf)
		if n > 0 {
			cut := false
			if first {
				p.once.Do(func() {
					cut = true
					p.kill()
					close(p.killed)
				})
			}
			if cut {
				return
			}
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// cliVia runs the drydock CLI against url.
func cliVia(url string, args ...string) (string, string, error) {
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "DRYDOCK_URL="+url, "DRYDOCK_TOKEN=")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

var keyInMessage = regexp.MustCompile(`--idempotency-key (\S+)`)

// kill -9 right after the server committed a job, before its answer left:
// the CLI retries with the same key while the server is down and gives up
// with a message naming the key; after the restart the same command with
// that key prints the job the lost request created, and the server holds
// exactly that one job, which then runs to the end.
func TestFaultKill9AfterCommitRetryWithTheKeyGivesTheSameJob(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.start()
	p := startKillProxy(t, s.addr, s.kill)

	start := time.Now()
	out, stderr, err := cliVia(p.url(), "schedule", "once only [fake:steps=1] [fake:delay=0s]")
	select {
	case <-p.killed:
	default:
		t.Fatalf("the server was not killed; schedule: %v\n%s%s", err, out, stderr)
	}
	if err == nil || out != "" {
		t.Fatalf("schedule with the server killed after its commit and not restarted: %v, stdout %q; want a failure", err, out)
	}
	m := keyInMessage.FindStringSubmatch(stderr)
	if m == nil || strings.Contains(stderr, "may exist anyway") || !strings.Contains(stderr, "no answer after 6 attempts") {
		t.Fatalf("the CLI's message does not say the outcome is unknown after 6 attempts and name the key:\n%s", stderr)
	}
	key := m[1]
	t.Logf("the CLI gave up after %s: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(stderr))

	s.start()
	committed := s.jobIDs()
	if len(committed) != 1 {
		t.Fatalf("%d jobs after the restart; want the 1 the killed server committed", len(committed))
	}
	out, stderr, err = s.cli("schedule", "once only [fake:steps=1] [fake:delay=0s]", "--idempotency-key", key)
	if err != nil {
		t.Fatalf("schedule again with the key: %v\n%s", err, stderr)
	}
	if got := strings.TrimSpace(out); got != committed[0] {
		t.Fatalf("schedule again with the key printed %q; want the committed job %s", got, committed[0])
	}
	if ids := s.jobIDs(); len(ids) != 1 || ids[0] != committed[0] {
		t.Fatalf("jobs after the retry: %v; want only %s", ids, committed[0])
	}
	if !strings.Contains(s.logs.String(), "job creation replayed for an idempotency key") {
		t.Error("the server did not log the replay")
	}
	if j, _ := s.waitTerminal(committed[0], time.Minute); j.Status != drydock.StatusComplete {
		t.Errorf("the job ended %s: %s", j.Status, j.Error)
	}
}

// The same fault with the server back while the CLI is still retrying:
// the CLI itself gets the committed job, and only it exists.
func TestFaultKill9AfterCommitCLIRetriesIntoTheRestartedServer(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.start()
	p := startKillProxy(t, s.addr, s.kill)

	type result struct {
		out, stderr string
		err         error
	}
	done := make(chan result, 1)
	go func() {
		out, stderr, err := cliVia(p.url(), "schedule", "once only [fake:steps=1] [fake:delay=0s]")
		done <- result{out, stderr, err}
	}()
	select {
	case <-p.killed:
	case r := <-done:
		t.Fatalf("schedule ended before the kill: %v\n%s%s", r.err, r.out, r.stderr)
	case <-time.After(30 * time.Second):
		t.Fatal("the server was not killed within 30s")
	}
	killed := time.Now()
	s.start()
	t.Logf("restarted in %s", time.Since(killed).Round(time.Millisecond))
	r := <-done
	if r.err != nil {
		t.Fatalf("schedule across the restart: %v\n%s", r.err, r.stderr)
	}
	id := strings.TrimSpace(r.out)
	if ids := s.jobIDs(); len(ids) != 1 || ids[0] != id {
		t.Fatalf("jobs after the restart: %v; the CLI printed %q: want exactly that one job", ids, id)
	}
}
