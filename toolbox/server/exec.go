package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/oomscore"
	"github.com/drydockhq/drydock/toolbox"
)

func (s *Server) handleExec(w http.ResponseWriter, r *http.Request) {
	var req toolbox.ExecRequest
	if err := decodeJSON(w, r, &req); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if err := s.exec(w, r, req); err != nil {
		writeError(w, r, s.log, err)
	}
}

// exec runs one process in its own process group and streams its output as
// NDJSON frames. Errors returned happen before the stream starts; after that
// they travel as an error frame.
func (s *Server) exec(w http.ResponseWriter, r *http.Request, req toolbox.ExecRequest) error {
	if (req.Command == "") == (len(req.Args) == 0) {
		return drydock.Errorf(drydock.EINVALID, "give either command or args")
	}
	if err := validEnv(req.Env); err != nil {
		return err
	}
	timeout, err := boundedDuration(req.Timeout, DefaultExecTimeout, "timeout")
	if err != nil {
		return err
	}
	cwd, err := s.dir(req.Cwd)
	if err != nil {
		return err
	}
	var cmd *exec.Cmd
	if req.Command != "" {
		cmd = exec.Command(s.cfg.Shell, "-c", req.Command)
	} else {
		cmd = exec.Command(req.Args[0], req.Args[1:]...)
	}
	cmd.Dir = cwd
	cmd.Env = s.env(req.Env)
	if len(req.Stdin) > 0 {
		cmd.Stdin = bytes.NewReader(req.Stdin)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	before := s.mem.sample()
	start := time.Now()
	name := cmd.Args[0]
	oomscore.Wrap(cmd, s.cfg.ExecShim)
	err = cmd.Start()
	if err == nil {
		_ = oomscore.Raise(cmd.Process.Pid) // see session.go
	}
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return startError(name, err)
	}
	pgid := cmd.Process.Pid

	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()

	frames := make(chan toolbox.ExecFrame, 16)
	var readers sync.WaitGroup
	for _, p := range []struct {
		f    *os.File
		kind string
	}{{outR, toolbox.FrameStdout}, {errR, toolbox.FrameStderr}} {
		readers.Go(func() {
			defer p.f.Close()
			readPipe(p.f, func(b []byte) { frames <- toolbox.ExecFrame{Type: p.kind, Data: b} })
		})
	}
	waited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		// Children that outlive the process may hold its pipes; take what
		// is buffered and end the stream.
		deadline := time.Now().Add(drainAfterEnd)
		outR.SetReadDeadline(deadline)
		errR.SetReadDeadline(deadline)
		readers.Wait()
		syscall.Kill(-pgid, syscall.SIGKILL)
		waited <- err
		close(frames)
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	enc := json.NewEncoder(w)
	clientGone := false
	timedOut := false
	ctxDone := r.Context().Done()
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				werr := <-waited
				code := -1
				if cmd.ProcessState != nil {
					code = cmd.ProcessState.ExitCode()
				} else if werr != nil {
					s.log.Warn("exec wait failed", "err", werr)
				}
				if clientGone {
					abandon(w)
					return nil
				}
				enc.Encode(toolbox.ExecFrame{Type: toolbox.FrameExit, ExitCode: code, TimedOut: timedOut,
					Duration:    drydock.Duration(time.Since(start).Round(time.Millisecond)),
					OutOfMemory: s.mem.since(before, s.mem.sample())})
				rc.Flush()
				return nil
			}
			if clientGone {
				continue
			}
			if err := enc.Encode(f); err != nil {
				clientGone = true
				syscall.Kill(-pgid, syscall.SIGKILL)
				continue
			}
			rc.Flush()
		case <-timer.C:
			timedOut = true
			syscall.Kill(-pgid, syscall.SIGKILL)
		case <-ctxDone:
			// The caller went away: stop the process, and let a retry with
			// the same request id run afresh.
			ctxDone = nil
			clientGone = true
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
}

// maxDrain bounds what readPipe takes once its read deadline has passed:
// more than a pipe can hold (64 KiB by default, 1 MiB at most) means a
// child that outlived the process is still writing.
const maxDrain = 1 << 20

// readPipe passes what f yields to emit until EOF, an error, or its read
// deadline (set once the process has ended) finds it idle. A deadline that
// passed while emit waited for a slow caller is not idleness: the pipe may
// still hold the end of the output, which a deadline alone lost (the last
// 60 KiB of 200 MiB under gVisor, whose pipes are slower).
func readPipe(f *os.File, emit func([]byte)) {
	buf := make([]byte, 32<<10)
	drained := -1 // bytes taken since the deadline first passed; -1 before
	for {
		began := time.Now()
		n, err := f.Read(buf)
		if n > 0 {
			emit(bytes.Clone(buf[:n]))
			if drained >= 0 {
				drained += n
			}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && time.Since(began) < drainAfterEnd/2 && drained < maxDrain {
			// The deadline passed before this read began: look again,
			// as long as an idle pipe would have been given.
			drained = max(drained, 0)
			f.SetReadDeadline(time.Now().Add(drainAfterEnd))
			continue
		}
		if err != nil {
			return
		}
	}
}

// startError says why a process could not start, and whose fault it is: a
// missing or forbidden program is the caller's; a full process table or
// memory is the sandbox's state (a fork bomb, say), which clears once
// processes end, so it is EUNAVAILABLE and never an internal error.
func startError(name string, err error) error {
	switch {
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist):
		return drydock.Errorf(drydock.EINVALID, "cannot run %q: executable not found", name)
	case errors.Is(err, os.ErrPermission):
		return drydock.Errorf(drydock.EINVALID, "cannot run %q: permission denied", name)
	case errors.Is(err, syscall.EAGAIN):
		return drydock.Errorf(drydock.EUNAVAILABLE, "cannot start %q: the sandbox's process limit is reached; end some processes (kill or wait) and retry", name)
	case errors.Is(err, syscall.ENOMEM):
		return drydock.Errorf(drydock.EUNAVAILABLE, "cannot start %q: the sandbox is out of memory", name)
	}
	return drydock.Errorf(drydock.EUNAVAILABLE, "cannot start %q: %s", name, errText(err))
}
