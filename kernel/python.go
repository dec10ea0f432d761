package kernel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/drydockhq/drydock"
)

// helperConn is the running helper.py and the pipe to it.
type helperConn struct {
	proc   *proc
	stdin  io.WriteCloser
	wmu    sync.Mutex
	exited <-chan struct{}
}

func (h *helperConn) send(req map[string]any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	h.wmu.Lock()
	defer h.wmu.Unlock()
	_, err = h.stdin.Write(append(b, '\n'))
	return err
}

func (h *helperConn) stop() {
	_ = h.stdin.Close()
	h.proc.stop()
}

// event is one line from the helper.
type event struct {
	ID             int64          `json:"id"`
	Type           string         `json:"type"`
	Name           string         `json:"name"`
	Text           string         `json:"text"`
	Data           map[string]any `json:"data"`
	Ename          string         `json:"ename"`
	Evalue         string         `json:"evalue"`
	Traceback      []string       `json:"traceback"`
	Status         string         `json:"status"`
	ExecutionCount int            `json:"execution_count"`
	Message        string         `json:"message"`
}

// call is one request to the helper awaiting its final event.
type call struct {
	id   int64
	done chan struct{}
	once sync.Once

	mu     sync.Mutex
	col    collector
	status string
	count  int
	err    error
}

func (c *call) finish(status string, err error) {
	c.once.Do(func() {
		c.mu.Lock()
		c.status, c.err = status, err
		c.mu.Unlock()
		close(c.done)
	})
}

func (k *Kernel) newCall() *call {
	c := &call{id: k.nextID.Add(1), done: make(chan struct{})}
	c.col = collector{res: &Result{Language: Python}, limit: k.cfg.OutputLimit, maxImages: maxImages}
	k.mu.Lock()
	k.calls[c.id] = c
	k.mu.Unlock()
	return c
}

func (k *Kernel) forget(c *call) {
	k.mu.Lock()
	delete(k.calls, c.id)
	if k.cur == c {
		k.cur = nil
	}
	k.mu.Unlock()
}

// failCurrent ends the running execution, if any, because the kernel under
// it went away, and tells the helper to stop waiting for it.
func (k *Kernel) failCurrent(reason string) {
	k.mu.Lock()
	c, h := k.cur, k.helper
	k.mu.Unlock()
	if c == nil {
		return
	}
	if h != nil {
		_ = h.send(map[string]any{"op": "abort", "id": c.id})
	}
	c.finish("aborted", errKernelLost{reason})
}

type errKernelLost struct{ reason string }

func (e errKernelLost) Error() string { return e.reason }

func (k *Kernel) startHelper() (*helperConn, error) {
	cmd := exec.Command(k.cfg.Python, filepath.Join(k.cfg.RuntimeDir, "helper.py"), k.connFile)
	cmd.Env = k.env()
	cmd.Stderr = &lineLogger{log: k.log.With("process", "helper"), level: slog.LevelWarn}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p, err := startProc(cmd)
	if err != nil {
		return nil, fmt.Errorf("start kernel helper: %w", err)
	}
	h := &helperConn{proc: p, stdin: stdin, exited: p.exited}
	go k.readEvents(stdout)
	k.mu.Lock()
	k.helper = h
	k.mu.Unlock()
	return h, nil
}

// readEvents routes the helper's events to the calls they belong to.
func (k *Kernel) readEvents(r io.Reader) {
	sc := bufio.NewScanner(r)
	// Images arrive base64-encoded on one line.
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			k.log.Warn("kernel helper sent garbage", "err", err)
			continue
		}
		if ev.ID == 0 {
			continue
		}
		k.mu.Lock()
		c := k.calls[ev.ID]
		k.mu.Unlock()
		if c != nil {
			c.handle(ev)
		}
	}
	// Drain so the helper never blocks on a full pipe while exiting.
	_, _ = io.Copy(io.Discard, r)
}

func (c *call) handle(ev event) {
	c.mu.Lock()
	switch ev.Type {
	case "stream":
		c.col.stream(ev.Name, ev.Text)
	case "display":
		c.col.output(OutputDisplay, ev.Data)
	case "result":
		c.col.output(OutputResult, ev.Data)
	case "clear":
		c.col.clear()
	case "error":
		c.col.fail(ev.Ename, ev.Evalue, ev.Traceback)
	case "done":
		c.count = ev.ExecutionCount
		c.mu.Unlock()
		var err error
		if ev.Message != "" {
			err = errors.New(ev.Message)
		}
		c.finish(ev.Status, err)
		return
	case "ready":
		c.mu.Unlock()
		c.finish("ready", nil)
		return
	case "failed":
		c.mu.Unlock()
		c.finish("failed", errors.New(ev.Message))
		return
	}
	c.mu.Unlock()
}

func (k *Kernel) executePython(ctx context.Context, code string, timeout time.Duration) (*Result, error) {
	select {
	case k.execSem <- struct{}{}:
		defer func() { <-k.execSem }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	wctx, cancel := context.WithTimeout(ctx, k.cfg.ReadyTimeout)
	err := k.WaitReady(wctx)
	cancel()
	if err != nil {
		return nil, err
	}

	c := k.newCall()
	k.mu.Lock()
	k.cur = c
	h := k.helper
	k.mu.Unlock()
	defer k.forget(c)
	start := time.Now()
	if h == nil {
		return nil, drydock.Errorf(drydock.EUNAVAILABLE, "python kernel is not running")
	}
	if err := h.send(map[string]any{"op": "execute", "id": c.id, "code": code}); err != nil {
		return nil, drydock.Errorf(drydock.EUNAVAILABLE, "python kernel is not reachable")
	}

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var timedOut bool
	select {
	case <-c.done:
	case <-timer.C:
		timedOut = true
		k.stopExecution(c)
	case <-ctx.Done():
		// The caller is gone; free the kernel for the next one.
		k.stopExecution(c)
		return nil, ctx.Err()
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	res := c.col.res
	res.Duration = time.Since(start)
	res.ExecutionCount = c.count
	res.TimedOut = timedOut
	var lost errKernelLost
	if errors.As(c.err, &lost) {
		res.Restarted = true
		if res.Error == nil || timedOut {
			res.Error = &ExecError{Name: "KernelRestarted", Value: lost.reason + "; variables and imports are gone"}
		}
	} else if c.err != nil {
		return nil, fmt.Errorf("python execution: %w", c.err)
	} else if c.status == "aborted" && res.Error == nil && !timedOut {
		res.Error = &ExecError{Name: "Aborted", Value: "the kernel did not run the code"}
	}
	if timedOut {
		msg := fmt.Sprintf("execution timed out after %v and was interrupted", timeout)
		if res.Restarted {
			msg = fmt.Sprintf("execution timed out after %v and did not stop when interrupted; the kernel was restarted and its state is lost", timeout)
		}
		if res.Error == nil {
			res.Error = &ExecError{Name: "TimeoutError"}
		}
		res.Error.Value = msg
	}
	if res.Error != nil {
		res.ExitCode = 1
	}
	return res, nil
}

// stopExecution interrupts c and, if it does not end within the grace
// period, restarts the kernel; it returns once c has ended.
func (k *Kernel) stopExecution(c *call) {
	if err := k.Interrupt(); err != nil {
		k.log.Warn("interrupt python kernel", "err", err)
	}
	select {
	case <-c.done:
		return
	case <-time.After(k.cfg.InterruptGrace):
	}
	k.log.Warn("python execution ignored the interrupt; restarting the kernel")
	ctx, cancel := context.WithTimeout(context.Background(), k.cfg.ReadyTimeout)
	defer cancel()
	select {
	case k.restartCh <- make(chan error, 1):
	case <-c.done:
	case <-ctx.Done():
		c.finish("aborted", errKernelLost{"the kernel did not respond"})
	}
	<-c.done
}

// lineLogger turns a process's output into log lines.
type lineLogger struct {
	log   *slog.Logger
	level slog.Level
	mu    sync.Mutex
	part  []byte
	last  string
}

// lastLine returns the last line written, which for a process that failed
// to start usually says why.
func (l *lineLogger) lastLine() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part = append(l.part, p...)
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			break
		}
		if line := string(bytes.TrimSpace(l.part[:i])); line != "" {
			l.log.Log(context.Background(), l.level, line)
			l.last = line
		}
		l.part = l.part[i+1:]
	}
	if len(l.part) > 4096 {
		l.log.Log(context.Background(), l.level, string(l.part))
		l.part = l.part[:0]
	}
	return len(p), nil
}
