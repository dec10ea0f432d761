package server

import (
	"crypto/rand"
	"maps"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// Bounds of a reply's output.
const (
	minMaxOutput = 64
	maxMaxOutput = 16 << 20
)

type sessionTable struct {
	srv *Server
	mu  sync.Mutex
	m   map[string]*session
}

func newSessionTable(srv *Server) *sessionTable {
	return &sessionTable{srv: srv, m: map[string]*session{}}
}

func (t *sessionTable) get(id string) (*session, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.m[id]
	if !ok {
		return nil, drydock.Errorf(drydock.ENOTFOUND, "no session %q", id)
	}
	return s, nil
}

func (t *sessionTable) closeAll() {
	t.mu.Lock()
	all := make([]*session, 0, len(t.m))
	for id, s := range t.m {
		all = append(all, s)
		delete(t.m, id)
	}
	t.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(func() { s.close() })
	}
	wg.Wait()
}

// close kills the shell for good.
func (s *session) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.kill()
}

// env is the environment of shells and one-shot processes: the daemon's own
// minus its configuration and secrets (TOOLBOXD_*: token, VNC password),
// terminal settings that keep programs from paging or drawing, then the
// configured variables, the job's (PUT /v1/env) and the requested ones.
func (s *Server) env(extra map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TOOLBOXD_") || strings.HasPrefix(kv, "TOOLBOX_TOKEN=") {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "TERM=dumb", "PAGER=cat", "GIT_PAGER=cat", "NO_COLOR=1")
	for _, m := range []map[string]string{s.cfg.Env, s.jobEnvVars(), extra} {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, k+"="+m[k])
		}
	}
	return out
}

// dir confines a working directory to the workspace and returns it as the
// sandbox sees it.
func (s *Server) dir(p string) (string, error) {
	root, rel, err := s.resolve(p)
	if err != nil {
		return "", err
	}
	fi, err := root.Stat(rel)
	if err != nil {
		return "", fsError(p, err)
	}
	if !fi.IsDir() {
		return "", drydock.Errorf(drydock.EINVALID, "%s is not a directory", p)
	}
	return s.ws.abs(rel), nil
}

func validEnv(env map[string]string) error {
	for k := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return drydock.Errorf(drydock.EINVALID, "invalid environment variable name %q", k)
		}
	}
	for _, v := range env {
		if strings.IndexByte(v, 0) >= 0 {
			return drydock.Errorf(drydock.EINVALID, "environment values must not contain NUL bytes")
		}
	}
	return nil
}

func (s *Server) newSession(req toolbox.SessionRequest) (*session, error) {
	if req.ID == "" {
		req.ID = "s-" + strings.ToLower(rand.Text()[:10])
	}
	if !sessionIDPattern.MatchString(req.ID) {
		return nil, drydock.Errorf(drydock.EINVALID, "session id must be 1 to 64 letters, digits, '.', '_' or '-'")
	}
	if err := validEnv(req.Env); err != nil {
		return nil, err
	}
	cwd, err := s.dir(req.Cwd)
	if err != nil {
		return nil, err
	}
	sess := &session{
		srv: s, id: req.ID, created: time.Now().UTC(), cwd: cwd, env: maps.Clone(req.Env),
		runLock: make(chan struct{}, 1),
		preempt: make(chan struct{}, 1),
		stray:   ring{buf: make([]byte, 0, strayMax)},
		oomSeen: s.mem.sample(),
	}
	t := s.sessions
	t.mu.Lock()
	if _, ok := t.m[req.ID]; ok {
		t.mu.Unlock()
		return nil, drydock.Errorf(drydock.ECONFLICT, "session %q already exists", req.ID)
	}
	if len(t.m) >= s.cfg.MaxSessions {
		t.mu.Unlock()
		return nil, drydock.Errorf(drydock.ECONFLICT, "there are already %d sessions, the most this sandbox allows; delete one", len(t.m))
	}
	t.m[req.ID] = sess
	t.mu.Unlock()

	sess.mu.Lock()
	sh, err := sess.start()
	if err == nil {
		sess.sh = sh
	}
	sess.mu.Unlock()
	if err != nil {
		t.mu.Lock()
		delete(t.m, req.ID)
		t.mu.Unlock()
		return nil, err
	}
	return sess, nil
}

func (s *Server) handleCreateSession(w http.ResponseWriter, r *http.Request) {
	var req toolbox.SessionRequest
	if err := decodeJSON(w, r, &req); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	sess, err := s.newSession(req)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	s.log.Info("session created", "session", sess.id)
	writeJSON(w, http.StatusCreated, sess.info())
}

func (s *Server) handleListSessions(w http.ResponseWriter, r *http.Request) {
	s.sessions.mu.Lock()
	all := make([]*session, 0, len(s.sessions.m))
	for _, sess := range s.sessions.m {
		all = append(all, sess)
	}
	s.sessions.mu.Unlock()
	out := make([]toolbox.Session, 0, len(all))
	for _, sess := range all {
		out = append(out, sess.info())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleDeleteSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	t := s.sessions
	t.mu.Lock()
	sess, ok := t.m[id]
	delete(t.m, id)
	t.mu.Unlock()
	if !ok {
		writeError(w, r, s.log, drydock.Errorf(drydock.ENOTFOUND, "no session %q", id))
		return
	}
	sess.close()
	s.log.Info("session deleted", "session", id)
	w.WriteHeader(http.StatusNoContent)
}

// handleRestartSession replaces the shell, keeping the session's id and its
// original cwd and environment.
func (s *Server) handleRestartSession(w http.ResponseWriter, r *http.Request) {
	sess, err := s.sessions.get(r.PathValue("id"))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	sess.kill()
	sess.lock()
	defer sess.unlock()
	sess.mu.Lock()
	if c := sess.cur; c != nil {
		c.out.close()
		sess.cur = nil
	}
	sess.stray.Reset()
	sess.lost = "" // the caller asked for the fresh shell
	if sess.sh == nil && !sess.closed {
		sh, serr := sess.start()
		if serr == nil {
			sess.sh = sh
		}
		err = serr
	}
	sess.mu.Unlock()
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	s.log.Info("session restarted", "session", sess.id)
	writeJSON(w, http.StatusOK, sess.info())
}

func (s *Server) handleRun(w http.ResponseWriter, r *http.Request) {
	var req toolbox.RunRequest
	if err := decodeJSON(w, r, &req); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	res, err := s.run(r.PathValue("id"), req)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) run(id string, req toolbox.RunRequest) (*toolbox.RunResult, error) {
	timeout, err := boundedDuration(req.Timeout, DefaultRunTimeout, "timeout")
	if err != nil {
		return nil, err
	}
	idle, err := boundedDuration(req.IdleTimeout, DefaultIdleTimeout, "idle_timeout")
	if err != nil {
		return nil, err
	}
	maxOut := req.MaxOutput
	if maxOut == 0 {
		maxOut = DefaultMaxOutput
	}
	if maxOut < minMaxOutput || maxOut > maxMaxOutput {
		return nil, drydock.Errorf(drydock.EINVALID, "max_output must be between %d and %d bytes", minMaxOutput, maxMaxOutput)
	}
	sess, err := s.sessions.get(id)
	if err != nil {
		return nil, err
	}
	if err := sess.acquire(strings.TrimSpace(req.Command) != ""); err != nil {
		return nil, err
	}
	defer sess.unlock()
	var c *command
	if strings.TrimSpace(req.Command) != "" {
		if c, err = sess.begin(req, timeout, maxOut); err != nil {
			return nil, err
		}
		s.log.Debug("command started", "session", id, "command", c.id)
	} else {
		sess.mu.Lock()
		c = sess.cur
		if c != nil && req.Timeout != 0 {
			// An explicit timeout on a wait extends the command's time.
			c.deadline = time.Now().Add(timeout)
		}
		sess.mu.Unlock()
		if c == nil {
			return nil, drydock.Errorf(drydock.EINVALID, "no command is running in session %s; give a command", id)
		}
	}
	res := sess.wait(c, idle)
	if !res.Running {
		s.log.Debug("command ended", "session", id, "command", c.id, "exit_code", res.ExitCode,
			"timed_out", res.TimedOut, "shell_exited", res.ShellExited)
	}
	return res, nil
}

func (s *Server) handleInterrupt(w http.ResponseWriter, r *http.Request) {
	sess, err := s.sessions.get(r.PathValue("id"))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	res, err := sess.interrupt()
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func boundedDuration(d drydock.Duration, def time.Duration, name string) (time.Duration, error) {
	v := time.Duration(d)
	if v == 0 {
		return def, nil
	}
	if v < 0 || v > MaxTimeout {
		return 0, drydock.Errorf(drydock.EINVALID, "%s must be positive and at most %s", name, MaxTimeout)
	}
	return v, nil
}
