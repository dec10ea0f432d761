package server

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// EnvSetter is a CodeRunner whose processes can take extra environment
// variables. SetEnv replaces them and reports whether it restarted the
// Python kernel to apply them.
type EnvSetter interface {
	SetEnv(ctx context.Context, env []string) (restarted bool, err error)
}

// Limits of PUT /v1/env, those of a job's secrets.
const (
	maxEnvVars     = drydock.MaxSecrets
	maxEnvValueLen = drydock.MaxSecretValueLen
)

func (s *Server) handleSetEnv(w http.ResponseWriter, r *http.Request) {
	var req toolbox.EnvRequest
	if err := decodeJSON(w, r, &req); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	res, err := s.SetEnv(r.Context(), req.Env)
	clear(req.Env)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// SetEnv replaces the variables added to the environment of every process
// started from now on. Shells already running keep the environment they
// started with (restarting them would kill what runs in them), a shell
// started later has the new ones; the runner sets the variables before the
// first tool call, so a job's shells start with them. The code runner applies them too, restarting the Python
// kernel when they changed.
func (s *Server) SetEnv(ctx context.Context, env map[string]string) (*toolbox.EnvResult, error) {
	if err := checkEnv(env); err != nil {
		return nil, err
	}
	// One change at a time, so that the shells' and the kernel's
	// variables cannot end up from two different requests.
	s.envMu.Lock()
	defer s.envMu.Unlock()
	res := &toolbox.EnvResult{Names: slices.Sorted(maps.Keys(env))}
	if res.Names == nil {
		res.Names = []string{}
	}
	env = maps.Clone(env)
	s.jobEnv.Store(&env)
	if es, ok := s.cfg.Code.(EnvSetter); ok && !maps.Equal(env, s.codeEnv) {
		restarted, err := es.SetEnv(ctx, envList(env))
		if err != nil {
			// codeEnv stays as it was, so a retry applies the change.
			return nil, err
		}
		s.codeEnv, res.KernelRestarted = env, restarted
	}
	s.log.Info("environment of new processes set", "names", res.Names, "kernel_restarted", res.KernelRestarted)
	return res, nil
}

// jobEnvVars returns the variables of the last SetEnv.
func (s *Server) jobEnvVars() map[string]string {
	if p := s.jobEnv.Load(); p != nil {
		return *p
	}
	return nil
}

func checkEnv(env map[string]string) error {
	if len(env) > maxEnvVars {
		return drydock.Errorf(drydock.ETOOLARGE, "env has %d variables; the limit is %d", len(env), maxEnvVars)
	}
	for name, v := range env {
		if err := drydock.CheckSecretName(name); err != nil {
			return drydock.Errorf(drydock.EINVALID, "env: %s", strings.TrimPrefix(drydock.ErrorMessage(err), "secrets: "))
		}
		if len(v) > maxEnvValueLen {
			return drydock.Errorf(drydock.ETOOLARGE, "env: the value of %s is over %d bytes", name, maxEnvValueLen)
		}
		if strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(v) {
			return drydock.Errorf(drydock.EINVALID, "env: the value of %s must be UTF-8 text without NUL bytes", name)
		}
	}
	return nil
}

// envList is env as NAME=value entries, sorted by name.
func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}
