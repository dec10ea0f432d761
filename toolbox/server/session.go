package server

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/oomscore"
	"github.com/drydockhq/drydock/toolbox"
)

// A session is one bash process fed through pipes. Each command is written
// to a script file and sourced, so that cd, export and background jobs
// persist while a syntax error in the command cannot wedge the shell's
// parser. After the script, the shell prints a marker with a random nonce and
// the status; the reader goroutine splits the output stream at it. The marker
// has no leading newline, so output that does not end in one is kept exact.
//
// Ctrl-C: bash and its foreground commands share one process group (the
// shell has no job control on pipes), so SIGINT goes to the group. The shell
// survives through a trap that returns from the sourced script, which
// abandons the rest of the command line as an interactive shell would;
// background jobs ignore SIGINT because bash starts them that way.
type session struct {
	srv     *Server
	id      string
	created time.Time
	cwd     string
	// env is the variables the session was created with; each shell
	// started gets them on top of the server's current environment
	// (so a restarted shell has the job's latest variables).
	env map[string]string

	// runLock lets one caller at a time wait on the session's command, and
	// lets interrupt give up waiting for it. preempt asks the caller waiting
	// on the command to return, so that a new wait takes over (acquire).
	runLock chan struct{}
	preempt chan struct{}

	mu     sync.Mutex // guards everything below; the reader holds it to feed output
	sh     *shell
	cur    *command // running, or finished with output not yet reported
	stray  ring     // output printed while no command ran (background jobs)
	seq    int
	closed bool
	// oomSeen is the memory cgroup as of the session's last reply: OOM
	// kills after it go in the next reply.
	oomSeen memSample
	// lost says how the shell ended when it ended while no command ran
	// (the OOM killer takes idle shells too); the next command, which runs
	// in a fresh shell, reports it.
	lost string
}

type shell struct {
	cmd    *exec.Cmd
	stdin  *os.File
	out    *os.File
	pgid   int
	marker []byte // "__DRYDOCK_<nonce>_"; the status and "__\n" follow
	script string
	exited chan struct{} // closed once bash is gone and its output drained
	status int
	// stopping: killed on purpose (restart, delete, close), not lost.
	stopping bool
}

type command struct {
	id          string
	text        string
	started     time.Time
	deadline    time.Time
	out         *cmdOutput
	activity    chan struct{}
	done        chan struct{}
	finished    bool
	exitCode    int
	shellExited bool
	interrupted bool
	timedOut    bool
	// shellEnd says how the shell ended under the command (shellExited);
	// fresh, how the previous shell ended when the command had to start a
	// new one.
	shellEnd string
	fresh    string
}

const (
	strayMax      = 64 << 10
	drainAfterEnd = 200 * time.Millisecond
	markerPrefix  = "__DRYDOCK_"
)

var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

func (s *session) lock() { s.runLock <- struct{}{} }

func (s *session) unlock() { <-s.runLock }

// start launches a fresh bash. Callers hold s.mu.
func (s *session) start() (*shell, error) {
	state, err := s.srv.state()
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	cmd := exec.Command(s.srv.cfg.Shell, "--noprofile", "--norc")
	cmd.Dir = s.cwd
	cmd.Env = s.srv.env(s.env)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The agent's processes, not toolboxd, go first when memory runs out:
	// the shim gives the shell the highest score before it runs, and
	// Raise covers a daemon without one.
	oomscore.Wrap(cmd, s.srv.cfg.ExecShim)
	err = cmd.Start()
	if err == nil {
		_ = oomscore.Raise(cmd.Process.Pid)
	}
	inR.Close()
	w.Close()
	if err != nil {
		r.Close()
		inW.Close()
		return nil, startError(s.srv.cfg.Shell, err)
	}
	sh := &shell{
		cmd:    cmd,
		stdin:  inW,
		out:    r,
		pgid:   cmd.Process.Pid,
		marker: []byte(markerPrefix + strings.ToLower(rand.Text()) + "_"),
		script: filepath.Join(state, "session-"+s.id+".sh"),
		exited: make(chan struct{}),
	}
	// The trap makes Ctrl-C abandon the sourced command and return to the
	// shell instead of killing it.
	if _, err := inW.WriteString("trap 'return 130 2>/dev/null' INT\n"); err != nil {
		syscall.Kill(-sh.pgid, syscall.SIGKILL)
		cmd.Wait()
		r.Close()
		inW.Close()
		return nil, fmt.Errorf("initialise shell: %w", err)
	}
	readerDone := make(chan struct{})
	go s.readLoop(sh, readerDone)
	go s.reap(sh, readerDone)
	return sh, nil
}

// readLoop feeds the shell's output to the current command, cutting it at
// the completion marker.
func (s *session) readLoop(sh *shell, done chan struct{}) {
	defer close(done)
	buf := make([]byte, 32<<10)
	var pending []byte
	for {
		n, err := sh.out.Read(buf)
		if n > 0 {
			s.mu.Lock()
			pending = s.feed(sh, append(pending, buf[:n]...))
			s.mu.Unlock()
		}
		if err != nil {
			break
		}
	}
	if len(pending) > 0 {
		s.mu.Lock()
		s.emit(pending)
		s.mu.Unlock()
	}
}

// feed passes data on up to any marker, completes the command at a whole
// marker, and returns the bytes that might begin a marker still to come.
func (s *session) feed(sh *shell, data []byte) []byte {
	for len(data) > 0 {
		i := bytes.Index(data, sh.marker)
		if i < 0 {
			keep := partialSuffix(data, sh.marker)
			s.emit(data[:len(data)-keep])
			return append([]byte(nil), data[len(data)-keep:]...)
		}
		rest := data[i+len(sh.marker):]
		j := bytes.Index(rest, []byte("__\n"))
		if j < 0 {
			if len(rest) > 8 { // not a status: print it as it is
				s.emit(data[:i+1])
				data = data[i+1:]
				continue
			}
			s.emit(data[:i])
			return append([]byte(nil), data[i:]...)
		}
		code, err := strconv.Atoi(string(rest[:j]))
		if err != nil {
			s.emit(data[:i+1])
			data = data[i+1:]
			continue
		}
		s.emit(data[:i])
		if c := s.cur; c != nil && !c.finished {
			c.finish(code, false)
		}
		data = rest[j+3:]
	}
	return nil
}

// partialSuffix is the length of the longest suffix of data that is a
// proper prefix of marker.
func partialSuffix(data, marker []byte) int {
	for n := min(len(marker)-1, len(data)); n > 0; n-- {
		if bytes.HasPrefix(marker, data[len(data)-n:]) {
			return n
		}
	}
	return 0
}

func (s *session) emit(p []byte) {
	if len(p) == 0 {
		return
	}
	if c := s.cur; c != nil && !c.finished {
		c.out.Write(p)
		select {
		case c.activity <- struct{}{}:
		default:
		}
		return
	}
	s.stray.Write(p)
}

func (c *command) finish(code int, shellExited bool) {
	c.finished, c.exitCode, c.shellExited = true, code, shellExited
	close(c.done)
}

// reap waits for bash to exit, drains what it printed last, kills whatever
// it left in its process group, and ends a command it was running.
func (s *session) reap(sh *shell, readerDone chan struct{}) {
	err := sh.cmd.Wait()
	status := -1
	if err == nil || sh.cmd.ProcessState != nil {
		status = sh.cmd.ProcessState.ExitCode()
	}
	// Background jobs may hold the pipe open; take what is buffered and go.
	sh.out.SetReadDeadline(time.Now().Add(drainAfterEnd))
	<-readerDone
	syscall.Kill(-sh.pgid, syscall.SIGKILL)
	sh.out.Close()
	sh.stdin.Close()
	os.Remove(sh.script)
	end := describeEnd(sh.cmd.ProcessState)
	s.mu.Lock()
	sh.status = status
	if c := s.cur; c != nil && !c.finished {
		c.shellEnd = end
		c.finish(status, true)
	} else if !sh.stopping && !s.closed {
		s.lost = end
	}
	if s.sh == sh {
		s.sh = nil
	}
	s.mu.Unlock()
	close(sh.exited)
}

// begin starts a command. Callers hold the run lock.
func (s *session) begin(req toolbox.RunRequest, timeout time.Duration, maxOut int) (*command, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, drydock.Errorf(drydock.ENOTFOUND, "session %s was deleted", s.id)
	}
	if c := s.cur; c != nil && !c.finished {
		return nil, s.busy(c)
	}
	var carry []byte
	if c := s.cur; c != nil {
		// The previous command ended after its last reply; show its tail
		// first rather than lose it.
		text, _ := c.out.take()
		carry = []byte(text)
		c.out.close()
		s.cur = nil
	}
	var fresh string
	if s.sh == nil {
		sh, err := s.start()
		if err != nil {
			return nil, err
		}
		s.sh = sh
		fresh, s.lost = s.lost, ""
	}
	sh := s.sh
	err := os.WriteFile(sh.script, []byte(req.Command+"\n"), 0o600)
	if os.IsNotExist(err) {
		// A command cleaned out /tmp, scratch directory and all.
		if err = os.MkdirAll(filepath.Dir(sh.script), 0o700); err == nil {
			err = os.WriteFile(sh.script, []byte(req.Command+"\n"), 0o600)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("write command script: %w", err)
	}
	s.seq++
	now := time.Now()
	c := &command{
		id:       fmt.Sprintf("%s-%d-%s", s.id, s.seq, strings.ToLower(rand.Text()[:6])),
		text:     req.Command,
		fresh:    fresh,
		started:  now,
		deadline: now.Add(timeout),
		activity: make(chan struct{}, 1),
		done:     make(chan struct{}),
		exitCode: -1,
	}
	c.out = newCmdOutput(maxOut, s.srv.outputFile(c.id))
	c.out.Write(carry)
	if s.stray.Len() > 0 {
		c.out.Write(s.stray.Bytes())
		s.stray.Reset()
	}
	line := fmt.Sprintf(". %s </dev/null; printf '%s%%d__\\n' \"$?\"\n", shellQuote(sh.script), sh.marker)
	s.cur = c
	if _, err := sh.stdin.WriteString(line); err != nil {
		// The shell died between commands; reap ends the command.
		syscall.Kill(-sh.pgid, syscall.SIGKILL)
	}
	return c, nil
}

// report builds the reply for c from what it printed since the last reply.
func (s *session) report(c *command) *toolbox.RunResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	out, cut := c.out.take()
	res := &toolbox.RunResult{
		CommandID:   c.id,
		Output:      out,
		Truncated:   cut,
		OutputBytes: c.out.total,
		OutputPath:  c.out.path(),
		ExitCode:    -1,
		Running:     !c.finished,
		TimedOut:    c.timedOut,
		Interrupted: c.interrupted,
		Duration:    drydock.Duration(time.Since(c.started).Round(time.Millisecond)),
	}
	if c.fresh != "" {
		res.FreshShell, res.ShellEnd = true, c.fresh
		c.fresh = ""
	}
	if c.finished {
		res.ExitCode = c.exitCode
		res.ShellExited = c.shellExited
		if c.shellExited {
			res.ShellEnd = c.shellEnd
		}
		c.out.close()
		if s.cur == c {
			s.cur = nil
		}
	}
	now := s.srv.mem.sample()
	res.OutOfMemory = s.srv.mem.since(s.oomSeen, now)
	if now.ok {
		s.oomSeen = now
	}
	return res
}

// preempted is the reply of a wait that another caller took over: the
// command runs on, and its output goes to the new caller.
func (s *session) preempted(c *command) *toolbox.RunResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &toolbox.RunResult{
		CommandID:   c.id,
		OutputBytes: c.out.total,
		OutputPath:  c.out.path(),
		ExitCode:    -1,
		Running:     true,
		Duration:    drydock.Duration(time.Since(c.started).Round(time.Millisecond)),
	}
}

// wait blocks until c ends, prints nothing for idle, or passes its deadline.
// It does not watch the caller's request: a caller that went away and
// retries with the same request id gets this reply.
func (s *session) wait(c *command, idle time.Duration) *toolbox.RunResult {
	idleT := time.NewTimer(idle)
	defer idleT.Stop()
	hardT := time.NewTimer(time.Until(c.deadline))
	defer hardT.Stop()
	for {
		select {
		case <-c.done:
			return s.report(c)
		case <-c.activity:
			idleT.Reset(idle)
		case <-idleT.C:
			return s.report(c)
		case <-s.preempt:
			return s.preempted(c)
		case <-hardT.C:
			s.mu.Lock()
			c.timedOut = true
			sh := s.sh
			s.mu.Unlock()
			s.stop(c, sh)
			return s.report(c)
		case <-s.srv.closed:
			<-c.done // Close kills the shell, which ends the command
			return s.report(c)
		}
	}
}

// stop interrupts c and, if it does not end within the grace period, kills
// the shell with everything in its process group.
func (s *session) stop(c *command, sh *shell) {
	if sh == nil {
		<-c.done
		return
	}
	syscall.Kill(-sh.pgid, syscall.SIGINT)
	select {
	case <-c.done:
		return
	case <-time.After(s.srv.cfg.InterruptGrace):
	}
	s.srv.log.Warn("command ignored Ctrl-C; killing its shell", "session", s.id, "command", c.id)
	syscall.Kill(-sh.pgid, syscall.SIGKILL)
	<-c.done
}

// interrupt sends Ctrl-C to the running command and reports how it ended,
// or that it still runs after the grace period.
func (s *session) interrupt() (*toolbox.RunResult, error) {
	s.mu.Lock()
	c, sh := s.cur, s.sh
	if c == nil || sh == nil || c.finished {
		s.mu.Unlock()
		if c != nil {
			return s.report(c), nil
		}
		return nil, drydock.Errorf(drydock.ECONFLICT, "no command is running in session %s", s.id)
	}
	c.interrupted = true
	s.mu.Unlock()
	syscall.Kill(-sh.pgid, syscall.SIGINT)

	grace := time.NewTimer(s.srv.cfg.InterruptGrace)
	defer grace.Stop()
	select {
	case s.runLock <- struct{}{}:
		defer s.unlock()
	case <-grace.C:
		// Someone else is waiting on the command and will report it.
		return &toolbox.RunResult{CommandID: c.id, ExitCode: -1, Running: !s.finished(c), Interrupted: true}, nil
	}
	s.mu.Lock()
	collected := s.cur != c
	s.mu.Unlock()
	if collected {
		// The waiter that held the lock reported the end of the command.
		return &toolbox.RunResult{CommandID: c.id, ExitCode: c.exitCode, Interrupted: true}, nil
	}
	select {
	case <-c.done:
	case <-grace.C:
	}
	return s.report(c), nil
}

func (s *session) finished(c *command) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return c.finished
}

// kill ends the shell and everything in its process group, and waits for it
// to be reaped (bounded, in case a process is stuck in the kernel).
func (s *session) kill() {
	s.mu.Lock()
	sh := s.sh
	if sh != nil {
		sh.stopping = true
	}
	s.mu.Unlock()
	if sh == nil {
		return
	}
	syscall.Kill(-sh.pgid, syscall.SIGKILL)
	select {
	case <-sh.exited:
	case <-time.After(5 * time.Second):
		s.srv.log.Warn("shell did not exit after SIGKILL", "session", s.id, "pid", sh.pgid)
	}
}

func (s *session) info() toolbox.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := toolbox.Session{ID: s.id, CreatedAt: s.created}
	if c := s.cur; c != nil && !c.finished {
		out.Running = true
		out.Command = clipCommand(c.text, 200)
		out.CommandStartedAt = c.started.UTC()
	}
	if s.sh != nil {
		out.Pid = s.sh.pgid
	}
	return out
}

// outputFile opens the file that keeps a command's whole output.
func (s *Server) outputFile(id string) func() (*os.File, string, error) {
	return func() (*os.File, string, error) {
		root, err := s.ws.open()
		if err != nil {
			return nil, "", err
		}
		if err := root.MkdirAll(OutputDir, 0o755); err != nil {
			return nil, "", err
		}
		rel := filepath.Join(OutputDir, id+".log")
		f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, "", err
		}
		return f, s.ws.abs(rel), nil
	}
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
