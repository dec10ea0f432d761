package kernel

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/oomscore"
	"github.com/drydockhq/drydock/toolbox"
)

//go:embed helper.py
var helperScript []byte

// Config says how to run code. The zero value works on Debian with the
// packages of the sandbox image.
type Config struct {
	// Python is the interpreter for the kernel, the helper and the Jupyter
	// server; it must import ipykernel (and jupyter_server for the server).
	// Default:
	// /usr/bin/python3 when it exists (a python3 earlier on PATH may lack
	// Debian's modules), else python3 from PATH.
	Python string
	// Node runs JavaScript and TypeScript; default "node".
	Node string
	// TypeScriptModule is the directory of the typescript npm package;
	// default: found from the tsc on PATH.
	TypeScriptModule string
	// Dir is the working directory of all code (the workspace).
	Dir string
	// RuntimeDir holds the kernel's connection file and sockets; created
	// with mode 0700. Default: a new directory under os.TempDir().
	RuntimeDir string
	// Env is added to the environment of the code.
	Env []string
	// OutputLimit caps stdout and stderr (each) of one execution, in bytes;
	// default 1 MiB.
	OutputLimit int
	// InterruptGrace is how long an interrupted execution may take to stop
	// before the kernel is restarted; default 3 s.
	InterruptGrace time.Duration
	// DefaultTimeout applies when Execute gets none; default 2 min.
	DefaultTimeout time.Duration
	// ReadyTimeout bounds the wait for a starting kernel; default 60 s.
	ReadyTimeout time.Duration
	// Server configures the Jupyter server started by StartServer.
	Server ServerConfig
}

func (c *Config) setDefaults() {
	if c.Python == "" {
		c.Python = "python3"
		if _, err := os.Stat("/usr/bin/python3"); err == nil {
			c.Python = "/usr/bin/python3"
		}
	}
	if c.Node == "" {
		c.Node = "node"
	}
	if c.OutputLimit == 0 {
		c.OutputLimit = 1 << 20
	}
	if c.InterruptGrace == 0 {
		c.InterruptGrace = 3 * time.Second
	}
	if c.DefaultTimeout == 0 {
		c.DefaultTimeout = 2 * time.Minute
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = 60 * time.Second
	}
	c.Server.setDefaults()
}

// Supervision tuning.
const (
	minBackoff  = 100 * time.Millisecond
	maxBackoff  = 5 * time.Second
	stableAfter = 30 * time.Second
	stopGrace   = 2 * time.Second
	maxImages   = 16
)

// Kernel runs Python in one persistent Jupyter kernel, JavaScript and
// TypeScript with node, and a Jupyter server for people on demand.
type Kernel struct {
	cfg      Config
	log      *slog.Logger
	ownDir   bool
	connFile string

	// execSem serializes executions (a kernel runs one cell at a time)
	// while letting a waiting caller give up.
	execSem chan struct{}

	mu        sync.Mutex
	started   bool
	closed    bool
	cancel    context.CancelFunc
	done      chan struct{}
	helper    *helperConn
	kernelPID int
	calls     map[int64]*call
	cur       *call
	readyCh   chan struct{} // closed while the kernel is ready
	restartCh chan chan error

	nextID   atomic.Int64
	ready    atomic.Bool
	restarts atomic.Int64

	server server
	ts     transpiler

	envMu    sync.Mutex
	extraEnv []string // SetEnv's
}

// New returns a kernel for cfg; nothing runs until Start.
func New(cfg Config, logger *slog.Logger) *Kernel {
	cfg.setDefaults()
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Kernel{
		cfg:       cfg,
		log:       logger.With("component", "kernel"),
		calls:     make(map[int64]*call),
		readyCh:   make(chan struct{}),
		restartCh: make(chan chan error),
		execSem:   make(chan struct{}, 1),
	}
}

// Start starts the Python kernel in the background (eagerly, so that the
// first execution does not pay for it) and keeps it alive until Close.
// It fails if Python cannot run a kernel at all.
func (k *Kernel) Start(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return errors.New("kernel is closed")
	}
	if k.started {
		return nil
	}
	if _, err := exec.LookPath(k.cfg.Python); err != nil {
		return drydock.Errorf(drydock.EUNAVAILABLE, "python is not installed: %v", err)
	}
	if err := k.prepareRuntimeDir(); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	k.started, k.cancel, k.done = true, cancel, make(chan struct{})
	go k.supervise(runCtx)
	return nil
}

func (k *Kernel) prepareRuntimeDir() error {
	if k.cfg.RuntimeDir == "" {
		dir, err := os.MkdirTemp("", "drydock-kernel-")
		if err != nil {
			return fmt.Errorf("create kernel runtime dir: %w", err)
		}
		k.cfg.RuntimeDir, k.ownDir = dir, true
	} else if err := os.MkdirAll(k.cfg.RuntimeDir, 0o700); err != nil {
		return fmt.Errorf("create kernel runtime dir: %w", err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	// IPC sockets in a private directory rather than TCP ports: nothing
	// else in the sandbox can connect, and no port can be taken by others.
	conn := map[string]any{
		"transport":        "ipc",
		"ip":               filepath.Join(k.cfg.RuntimeDir, "kernel"),
		"shell_port":       1,
		"iopub_port":       2,
		"stdin_port":       3,
		"control_port":     4,
		"hb_port":          5,
		"key":              hex.EncodeToString(key),
		"signature_scheme": "hmac-sha256",
		"kernel_name":      "python3",
	}
	b, _ := json.Marshal(conn)
	k.connFile = filepath.Join(k.cfg.RuntimeDir, "kernel.json")
	if err := os.WriteFile(k.connFile, b, 0o600); err != nil {
		return fmt.Errorf("write kernel connection file: %w", err)
	}
	if err := os.WriteFile(filepath.Join(k.cfg.RuntimeDir, "helper.py"), helperScript, 0o600); err != nil {
		return fmt.Errorf("write kernel helper: %w", err)
	}
	return nil
}

// Ready reports per component whether it is usable: the Python kernel,
// node (installed), and the Jupyter server once StartServer has been called.
func (k *Kernel) Ready() map[string]bool {
	_, err := exec.LookPath(k.cfg.Node)
	r := map[string]bool{toolbox.ComponentKernel: k.ready.Load(), toolbox.ComponentNode: err == nil}
	if ok, asked := k.server.status(); asked {
		r[toolbox.ComponentJupyterServer] = ok
	}
	return r
}

// WaitReady waits until the Python kernel is ready.
func (k *Kernel) WaitReady(ctx context.Context) error {
	k.mu.Lock()
	ch, started := k.readyCh, k.started
	k.mu.Unlock()
	if !started {
		return drydock.Errorf(drydock.EUNAVAILABLE, "python kernel is not started")
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return drydock.Errorf(drydock.EUNAVAILABLE, "python kernel is not ready: %v", ctx.Err())
	}
}

// Restarts reports how many times the Python kernel has been restarted.
func (k *Kernel) Restarts() int64 { return k.restarts.Load() }

// Close stops the kernel, the helper, the Jupyter server and waits for them.
func (k *Kernel) Close() error {
	k.mu.Lock()
	k.closed = true
	cancel, done := k.cancel, k.done
	k.mu.Unlock()
	k.server.stop()
	k.ts.mu.Lock()
	k.ts.stop()
	k.ts.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	if k.ownDir {
		return os.RemoveAll(k.cfg.RuntimeDir)
	}
	return nil
}

func (k *Kernel) setReady(ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ok == k.ready.Load() {
		return
	}
	k.ready.Store(ok)
	if ok {
		close(k.readyCh)
	} else {
		k.readyCh = make(chan struct{})
	}
}

// env is the environment of the kernel and of node.
func (k *Kernel) env() []string {
	env := append(os.Environ(),
		// debugpy (imported by ipykernel) warns on every start otherwise.
		"PYDEVD_DISABLE_FILE_VALIDATION=1",
	)
	env = append(env, k.cfg.Env...)
	k.envMu.Lock()
	defer k.envMu.Unlock()
	return append(env, k.extraEnv...)
}

// SetEnv replaces the variables added after Config.Env to the environment
// of every process started from now on (the Python kernel and its helper,
// node, the Jupyter server), and reports whether they changed. A Python
// kernel already running keeps its environment until Restart.
func (k *Kernel) SetEnv(env []string) bool {
	k.envMu.Lock()
	defer k.envMu.Unlock()
	if slices.Equal(env, k.extraEnv) {
		return false
	}
	k.extraEnv = slices.Clone(env)
	return true
}

// proc is a started child process.
type proc struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

func startProc(cmd *exec.Cmd) (*proc, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// Agent code runs in these processes: they, not the daemon, go first
	// when memory runs out.
	_ = oomscore.Raise(cmd.Process.Pid)
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// stop ends the process group gently, then forcefully.
func (p *proc) stop() {
	if p == nil {
		return
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.exited
}

func (k *Kernel) startKernel() (*proc, error) {
	for i := 1; i <= 5; i++ {
		_ = os.Remove(fmt.Sprintf("%s-%d", filepath.Join(k.cfg.RuntimeDir, "kernel"), i))
	}
	cmd := exec.Command(k.cfg.Python, "-m", "ipykernel_launcher", "-f", k.connFile,
		// History in memory: nothing written to a home that may be
		// read-only, and no SQLite start-up cost.
		"--HistoryManager.hist_file=:memory:",
		"--InteractiveShell.colors=NoColor")
	cmd.Dir = k.cfg.Dir
	cmd.Env = k.env()
	out := &lineLogger{log: k.log.With("process", "ipykernel"), level: slog.LevelDebug}
	cmd.Stdout, cmd.Stderr = out, out
	p, err := startProc(cmd)
	if err != nil {
		return nil, fmt.Errorf("start python kernel: %w", err)
	}
	k.mu.Lock()
	k.kernelPID = cmd.Process.Pid
	k.mu.Unlock()
	return p, nil
}

// supervise keeps a kernel and its helper running until ctx ends. The two
// fail independently: a helper that dies is replaced and reconnects to the
// same kernel, whose state survives.
func (k *Kernel) supervise(ctx context.Context) {
	defer close(k.done)
	var (
		h       *helperConn
		kp      *proc
		acks    []chan error
		backoff = minBackoff
	)
	defer func() {
		k.setReady(false)
		k.failCurrent("the kernel was shut down")
		kp.stop()
		if h != nil {
			h.stop()
		}
		for _, ack := range acks {
			ack <- errors.New("kernel is closed")
		}
	}()
	pause := func(why string, err error) bool {
		k.log.Warn(why, "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
		return true
	}
	for ctx.Err() == nil {
		var err error
		if h == nil {
			if h, err = k.startHelper(); err != nil {
				h = nil
				if !pause("start kernel helper", err) {
					return
				}
				continue
			}
		}
		if kp == nil {
			if kp, err = k.startKernel(); err != nil {
				kp = nil
				if !pause("start python kernel", err) {
					return
				}
				continue
			}
		}

		c := k.newCall()
		stuck := false
		connectErr := h.send(map[string]any{"op": "connect", "id": c.id, "timeout": k.cfg.ReadyTimeout.Seconds()})
		if connectErr != nil {
			h.stop()
			h = nil
		} else {
			select {
			case <-c.done:
				connectErr, stuck = c.err, c.err != nil
			case <-kp.exited:
				connectErr = fmt.Errorf("kernel exited while starting: %v", kp.err)
				kp = nil
			case <-h.exited:
				connectErr = errors.New("kernel helper exited while connecting")
				h = nil
			case ack := <-k.restartCh:
				acks = append(acks, ack)
				connectErr = errors.New("restart requested while starting")
				kp.stop()
				kp = nil
			case <-ctx.Done():
				return
			}
		}
		k.forget(c)
		if connectErr != nil {
			if h != nil {
				_ = h.send(map[string]any{"op": "abort", "id": c.id})
			}
			if stuck && kp != nil {
				// A kernel that does not answer in time is hung.
				kp.stop()
				kp = nil
			}
			if !pause("connect to python kernel", connectErr) {
				return
			}
			continue
		}

		k.setReady(true)
		k.log.Info("python kernel ready", "pid", kp.cmd.Process.Pid)
		for _, ack := range acks {
			ack <- nil
		}
		acks = nil
		up := time.Now()

		var reason string
		select {
		case <-kp.exited:
			reason = "the kernel died"
			k.log.Warn("python kernel exited", "err", kp.err)
			kp = nil
		case <-h.exited:
			reason = "lost the connection to the kernel"
			k.log.Warn("kernel helper exited", "err", h.proc.err)
			h = nil
		case ack := <-k.restartCh:
			acks = append(acks, ack)
			reason = "the kernel was restarted"
			kp.stop()
			kp = nil
		case <-ctx.Done():
			return
		}
		k.setReady(false)
		k.restarts.Add(1)
		k.failCurrent(reason)
		if time.Since(up) > stableAfter || len(acks) > 0 {
			backoff = minBackoff
			continue
		}
		if !pause("python kernel stopped; restarting", errors.New(reason)) {
			return
		}
	}
}

// Restart replaces the Python kernel with a fresh one (losing its state)
// and waits until it is ready. A running execution ends with Restarted set.
func (k *Kernel) Restart(ctx context.Context) error {
	k.mu.Lock()
	started, done := k.started, k.done
	k.mu.Unlock()
	if !started {
		return drydock.Errorf(drydock.EUNAVAILABLE, "python kernel is not started")
	}
	ack := make(chan error, 1)
	select {
	case k.restartCh <- ack:
	case <-done:
		return errors.New("kernel is closed")
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-ack:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Interrupt sends SIGINT to the kernel's process group, which raises
// KeyboardInterrupt in the running code (and stops its child processes),
// as Jupyter's own interrupt does.
func (k *Kernel) Interrupt() error {
	k.mu.Lock()
	pid := k.kernelPID
	k.mu.Unlock()
	if pid == 0 || !k.ready.Load() {
		return drydock.Errorf(drydock.EUNAVAILABLE, "python kernel is not running")
	}
	if err := syscall.Kill(-pid, syscall.SIGINT); err != nil {
		return fmt.Errorf("interrupt python kernel: %w", err)
	}
	return nil
}
