package desktop

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/drydockhq/drydock/oomscore"
)

// Supervision tuning. A component that stays up longer than stableAfter is
// considered healthy again, so its next crash restarts it after minBackoff.
const (
	minBackoff   = 100 * time.Millisecond
	maxBackoff   = 5 * time.Second
	stableAfter  = 30 * time.Second
	readyTimeout = 20 * time.Second
	probeEvery   = 15 * time.Millisecond
	stopGrace    = 2 * time.Second
	// depLostAfter is how long a component keeps running after the component
	// it depends on went away before it is restarted with it.
	depLostAfter = 2 * time.Second
)

// component is one long-running process that the desktop keeps alive.
type component struct {
	name string
	log  *slog.Logger
	// command builds a fresh command for every start.
	command func() (*exec.Cmd, error)
	// probe returns nil once the started process does its job.
	probe func(ctx context.Context) error
	// after must be ready before this component starts.
	after *component

	ready    atomic.Bool
	restarts atomic.Int64

	mu   sync.Mutex
	proc *exec.Cmd
}

// run keeps the component alive until ctx ends.
func (c *component) run(ctx context.Context) {
	backoff := minBackoff
	for ctx.Err() == nil {
		if c.after != nil && !waitReady(ctx, c.after) {
			return
		}
		started := time.Now()
		err := c.once(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(started) > stableAfter {
			backoff = minBackoff
		}
		c.restarts.Add(1)
		c.log.Warn("component stopped; restarting", "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// once starts the process, marks it ready when its probe passes, and returns
// when the process exits, its dependency disappears, or ctx ends.
func (c *component) once(ctx context.Context) error {
	cmd, err := c.command()
	if err != nil {
		return err
	}
	out := &lineLogger{log: c.log}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	// A component the OOM killer takes is restarted; the daemon that
	// supervises it must not be the one taken.
	_ = oomscore.Raise(cmd.Process.Pid)
	c.mu.Lock()
	c.proc = cmd
	c.mu.Unlock()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		c.ready.Store(false)
		c.mu.Lock()
		c.proc = nil
		c.mu.Unlock()
	}()

	probeCtx, cancelProbe := context.WithTimeout(ctx, readyTimeout)
	probed := make(chan error, 1)
	go func() { probed <- pollProbe(probeCtx, c.probe) }()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var depLost time.Time
	for {
		select {
		case err := <-exited:
			cancelProbe()
			return exitError(err)
		case err := <-probed:
			cancelProbe()
			if err != nil {
				c.log.Warn("component did not become ready", "err", err)
				stop(cmd, exited)
				return err
			}
			c.ready.Store(true)
			c.log.Info("component ready", "pid", cmd.Process.Pid)
			probed = nil
		case <-tick.C:
			if c.after == nil || c.after.ready.Load() {
				depLost = time.Time{}
				continue
			}
			if depLost.IsZero() {
				depLost = time.Now()
			} else if time.Since(depLost) > depLostAfter {
				cancelProbe()
				stop(cmd, exited)
				return errors.New(c.after.name + " went away")
			}
		case <-ctx.Done():
			cancelProbe()
			stop(cmd, exited)
			return ctx.Err()
		}
	}
}

// pid returns the process id of the running process, or 0.
func (c *component) pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil || c.proc.Process == nil {
		return 0
	}
	return c.proc.Process.Pid
}

func pollProbe(ctx context.Context, probe func(context.Context) error) error {
	var last error
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		last = probe(pctx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-time.After(probeEvery):
		}
	}
}

func waitReady(ctx context.Context, c *component) bool {
	for !c.ready.Load() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(probeEvery):
		}
	}
	return true
}

// stop ends the process group gently, then forcefully.
func stop(cmd *exec.Cmd, exited <-chan error) {
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
	}
	// Children that outlived the leader (none expected) go too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

func exitError(err error) error {
	if err == nil {
		return errors.New("exited with status 0")
	}
	return err
}

// lineLogger turns a process's output into debug log lines.
type lineLogger struct {
	log  *slog.Logger
	mu   sync.Mutex
	part []byte
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
		if line := string(l.part[:i]); line != "" {
			l.log.Debug(line)
		}
		l.part = l.part[i+1:]
	}
	if len(l.part) > 4096 {
		l.log.Debug(string(l.part))
		l.part = l.part[:0]
	}
	return len(p), nil
}

var _ io.Writer = (*lineLogger)(nil)
