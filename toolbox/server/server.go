package server

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// Defaults of Config.
const (
	DefaultMaxReadBytes       = 32 << 20
	DefaultMaxSessions        = 16
	DefaultIdempotencyEntries = 1024
	DefaultIdempotencyBytes   = 64 << 20
	DefaultRunTimeout         = 2 * time.Minute
	DefaultIdleTimeout        = 30 * time.Second
	DefaultMaxOutput          = 30000
	DefaultExecTimeout        = 10 * time.Minute
	MaxTimeout                = 24 * time.Hour
	// OutputDir is where whole outputs of sessions' commands are kept,
	// relative to the workspace.
	OutputDir = ".drydock/outputs"
)

// Config configures a Server. Zero values take the defaults above.
type Config struct {
	// Workspace is the directory every file path is confined to, and the
	// starting directory of shells.
	Workspace string
	// ExecShim is the daemon's own executable, through which commands and
	// shells start (oomscore.Wrap) so that they run with the highest OOM
	// score from their first instruction; empty raises the score just
	// after the start instead (tests, which run no daemon binary).
	ExecShim string
	// Token authenticates callers. An empty token fails closed: every
	// authenticated route answers 401.
	Token   string
	Profile drydock.Profile
	// Version is the daemon's build version, reported by /v1/info.
	Version string
	// Env is added to the environment of shells and processes.
	Env map[string]string
	// Shell is the bash binary; default "bash" from PATH.
	Shell string
	// StateDir holds the server's private scratch files (command scripts);
	// default a new directory under os.TempDir(), removed by Close.
	StateDir string

	// Desktop and Code are the optional services of the sandbox; nil means
	// the sandbox has none and their routes answer 501.
	Desktop Desktop
	Code    CodeRunner
	// Jupyter is the Jupyter server for people; nil: its routes answer 501.
	Jupyter Jupyter
	// Memory is where the sandbox's memory accounting is read, to report
	// OOM kills; the zero value reports none.
	Memory MemoryConfig

	MaxReadBytes int64
	MaxSessions  int
	// IdempotencyEntries and IdempotencyBytes bound the memory of stored
	// responses; IdempotencyMaxBody is the largest response kept for replay.
	IdempotencyEntries int
	IdempotencyBytes   int64
	IdempotencyMaxBody int
	// InterruptGrace is how long a command may take to stop after Ctrl-C
	// before the shell is killed (hard timeout) or the reply says it still
	// runs (interrupt). Default 3s.
	InterruptGrace time.Duration
}

func (c *Config) setDefaults() {
	if c.Workspace == "" {
		c.Workspace = "/workspace"
	}
	if c.Profile == "" {
		c.Profile = drydock.ProfileHeadless
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.Shell == "" {
		c.Shell = "bash"
	}
	if c.MaxReadBytes <= 0 {
		c.MaxReadBytes = DefaultMaxReadBytes
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.IdempotencyEntries <= 0 {
		c.IdempotencyEntries = DefaultIdempotencyEntries
	}
	if c.IdempotencyBytes <= 0 {
		c.IdempotencyBytes = DefaultIdempotencyBytes
	}
	if c.IdempotencyMaxBody <= 0 {
		c.IdempotencyMaxBody = 1 << 20
	}
	if c.InterruptGrace <= 0 {
		c.InterruptGrace = 3 * time.Second
	}
}

// Server is toolboxd's HTTP API. It is an http.Handler; Close ends every
// shell it started.
type Server struct {
	cfg  Config
	log  *slog.Logger
	mux  *http.ServeMux
	idem *idempotency
	// authMu guards tokenH and claimed, which Claim replaces (claim.go).
	authMu  sync.RWMutex
	tokenH  [32]byte
	claimed bool

	ws        *workspace
	mem       *memory
	jupyter   http.Handler // the proxy to cfg.Jupyter
	sessions  *sessionTable
	stateDir  string
	ownsState bool

	// jobEnv holds the variables of PUT /v1/env (env.go), read by every
	// process start; envMu serializes changes, and codeEnv is what the
	// code runner last applied.
	jobEnv  atomic.Pointer[map[string]string]
	envMu   sync.Mutex
	codeEnv map[string]string

	// fileOps bounds the file calls served at once (see limitFiles).
	fileOps chan struct{}

	closeOnce sync.Once
	closed    chan struct{}
}

// New builds a server over cfg.Workspace. It does not fail: a workspace that
// cannot be opened yet makes the files component unready until it can.
func New(cfg Config, logger *slog.Logger) *Server {
	cfg.setDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		fileOps: make(chan struct{}, maxFileOps),
		cfg:     cfg,
		log:     logger,
		mux:     http.NewServeMux(),
		idem:    newIdempotency(cfg.IdempotencyEntries, cfg.IdempotencyBytes, cfg.IdempotencyMaxBody),
		ws:      newWorkspace(cfg.Workspace),
		mem:     newMemory(cfg.Memory),
		closed:  make(chan struct{}),
	}
	s.tokenH = hashToken(cfg.Token)
	s.stateDir = cfg.StateDir
	s.sessions = newSessionTable(s)
	if cfg.Jupyter != nil {
		s.jupyter = newJupyterProxy(cfg.Jupyter, s)
	}
	s.routes()
	if cfg.Memory.Limit > 0 && cfg.Memory.Cgroup != "" {
		s.mem.guard = newGuard(cfg.Memory.Limit, cfg.Memory.Cgroup, logger)
		go s.mem.guard.run(s.closed)
	}
	return s
}

// state returns the private scratch directory, creating it on first use.
func (s *Server) state() (string, error) {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	if s.stateDir != "" {
		return s.stateDir, os.MkdirAll(s.stateDir, 0o700)
	}
	dir, err := os.MkdirTemp("", "toolboxd-")
	if err != nil {
		return "", err
	}
	s.stateDir, s.ownsState = dir, true
	return dir, nil
}

// Close kills every session's shell and its process group and removes the
// server's scratch files. The workspace is left as it is.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.sessions.closeAll()
		s.ws.close()
		s.sessions.mu.Lock()
		if s.ownsState {
			os.RemoveAll(s.stateDir)
		}
		s.sessions.mu.Unlock()
	})
	return nil
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /v1/health", s.handleHealth)
	s.mux.HandleFunc("GET /v1/ready", s.handleReady)
	s.mux.HandleFunc("GET /v1/info", s.handleInfo)
	s.mux.HandleFunc("POST /v1/claim", s.handleClaim)
	s.mux.HandleFunc("PUT /v1/env", s.handleSetEnv)

	s.mux.HandleFunc("GET /v1/files", s.limitFiles(s.handleRead))
	s.mux.HandleFunc("PUT /v1/files", s.limitFiles(s.handleWrite))
	s.mux.HandleFunc("DELETE /v1/files", s.limitFiles(s.handleDelete))
	s.mux.HandleFunc("GET /v1/files/stat", s.limitFiles(s.handleStat))
	s.mux.HandleFunc("GET /v1/files/list", s.limitFiles(s.handleList))
	s.mux.HandleFunc("POST /v1/files/move", s.limitFiles(s.handleMove))
	s.mux.HandleFunc("POST /v1/files/mkdir", s.limitFiles(s.handleMkdir))
	s.mux.HandleFunc("PUT /v1/files/tar", s.limitFiles(s.handleUploadTar))
	s.mux.HandleFunc("GET /v1/files/tar", s.limitFiles(s.handleDownloadTar))

	s.mux.HandleFunc("POST /v1/sessions", s.handleCreateSession)
	s.mux.HandleFunc("GET /v1/sessions", s.handleListSessions)
	s.mux.HandleFunc("DELETE /v1/sessions/{id}", s.handleDeleteSession)
	s.mux.HandleFunc("POST /v1/sessions/{id}/restart", s.handleRestartSession)
	s.mux.HandleFunc("POST /v1/sessions/{id}/run", s.handleRun)
	s.mux.HandleFunc("POST /v1/sessions/{id}/interrupt", s.handleInterrupt)
	s.mux.HandleFunc("POST /v1/exec", s.handleExec)

	s.mux.HandleFunc("POST /v1/code/run", s.handleCodeRun)
	s.mux.HandleFunc("GET /v1/desktop/screenshot", s.handleScreenshot)
	s.mux.HandleFunc("POST /v1/desktop/action", s.handleDesktopAction)
	s.mux.HandleFunc("GET /v1/desktop/vnc", s.handleVNC)
	s.mux.HandleFunc("POST /v1/jupyter/start", s.handleJupyterStart)
	s.mux.HandleFunc(jupyterProxyPrefix+"/{path...}", s.handleJupyterProxy)

	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, s.log, drydock.Errorf(drydock.ENOTFOUND, "no route %s %s", r.Method, r.URL.Path))
	})
}

// ServeHTTP authenticates the request, applies request-id idempotency to
// mutating requests, and routes it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id := r.Header.Get(toolbox.HeaderRequestID); id != "" {
		w.Header().Set(toolbox.HeaderRequestID, id)
	}
	// Liveness says only that the process answers, so it needs no token.
	if r.URL.Path == "/v1/health" && r.Method == http.MethodGet {
		s.mux.ServeHTTP(w, r)
		return
	}
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolboxd"`)
		writeError(w, r, s.log, drydock.Errorf(drydock.EUNAUTHORIZED, "missing or invalid bearer token"))
		return
	}
	// Jupyter's requests are people's, proxied: not replayed, never buffered.
	if isMutating(r.Method) && !strings.HasPrefix(r.URL.Path, jupyterProxyPrefix+"/") {
		if id := r.Header.Get(toolbox.HeaderRequestID); id != "" {
			s.idem.serve(w, r, id, s.log, s.mux)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

func isMutating(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch:
		return true
	}
	return false
}

// workspacePaths are the spellings of the workspace root that an absolute
// path may start with: as configured, and with symlinks resolved.
func workspacePaths(dir string) []string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = filepath.Clean(dir)
	}
	out := []string{abs}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		out = append(out, real)
	}
	return out
}

// maxFileOps is how many file calls run at once; more wait their turn.
const maxFileOps = 8

// limitFiles bounds concurrent file calls. File system calls block an OS
// thread each, and when the agent's processes hold every pid of the sandbox
// (a fork bomb) the Go runtime cannot start another thread and toolboxd
// dies. With this bound the threads file calls need stay within the reserve
// that toolboxd starts at launch (cmd/toolboxd, reserveThreads).
func (s *Server) limitFiles(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.fileOps <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		defer func() { <-s.fileOps }()
		h(w, r)
	}
}
