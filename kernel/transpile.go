package kernel

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sync"
)

//go:embed transpile.js
var transpileScript string

// transpiler is a node process, started on first use and kept, that turns
// TypeScript into JavaScript; keeping it saves loading the compiler (about
// half a second) on every TypeScript execution.
type transpiler struct {
	mu     sync.Mutex
	p      *proc
	stdin  io.WriteCloser
	stdout *bufio.Reader
}

type transpileReply struct {
	Ready  bool     `json:"ready"`
	JS     string   `json:"js"`
	Errors []string `json:"errors"`
}

// transpile returns the JavaScript for code, or the compiler's syntax
// errors. A process that fails is replaced on the next call.
func (k *Kernel) transpile(ctx context.Context, code string, esm bool) (js string, errs []string, err error) {
	t := &k.ts
	t.mu.Lock()
	defer t.mu.Unlock()
	k.mu.Lock()
	closed := k.closed
	k.mu.Unlock()
	if closed {
		return "", nil, errors.New("kernel is closed")
	}
	if t.p == nil {
		if err := k.startTranspiler(ctx); err != nil {
			return "", nil, err
		}
	}
	req, _ := json.Marshal(map[string]any{"code": code, "esm": esm})
	type result struct {
		reply transpileReply
		err   error
	}
	done := make(chan result, 1)
	go func() {
		if _, err := t.stdin.Write(append(req, '\n')); err != nil {
			done <- result{err: err}
			return
		}
		reply, err := t.read()
		done <- result{reply, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.stop()
			return "", nil, fmt.Errorf("typescript transpiler: %w", r.err)
		}
		return r.reply.JS, r.reply.Errors, nil
	case <-ctx.Done():
		t.stop()
		<-done
		return "", nil, ctx.Err()
	}
}

func (k *Kernel) startTranspiler(ctx context.Context) error {
	mod, err := k.typeScriptModule()
	if err != nil {
		return err
	}
	t := &k.ts
	cmd := exec.Command(k.cfg.Node, "-e", transpileScript, "--", mod)
	cmd.Env = k.env()
	cmd.Stderr = &lineLogger{log: k.log.With("process", "transpiler"), level: slog.LevelWarn}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	p, err := startProc(cmd)
	if err != nil {
		return fmt.Errorf("start typescript transpiler: %w", err)
	}
	t.p, t.stdin, t.stdout = p, stdin, bufio.NewReaderSize(stdout, 64<<10)
	ready := make(chan error, 1)
	go func() {
		r, err := t.read()
		if err == nil && !r.Ready {
			err = errors.New("unexpected greeting")
		}
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		t.stop()
		return fmt.Errorf("start typescript transpiler: %w", err)
	}
	return nil
}

func (t *transpiler) read() (transpileReply, error) {
	var r transpileReply
	line, err := t.stdout.ReadBytes('\n')
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(line, &r)
}

// stop ends the process; the caller holds t.mu.
func (t *transpiler) stop() {
	if t.p == nil {
		return
	}
	_ = t.stdin.Close()
	t.p.stop()
	t.p = nil
}
