package server

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

const envCanary = "env-canary-5c2f91"

// envCode is a CodeRunner that records the environments it is given.
type envCode struct {
	mu   sync.Mutex
	envs [][]string
	fail bool
}

func (c *envCode) Components(context.Context) []toolbox.Component { return nil }
func (c *envCode) Run(context.Context, toolbox.CodeRequest) (*toolbox.CodeResult, error) {
	return &toolbox.CodeResult{}, nil
}

func (c *envCode) SetEnv(_ context.Context, env []string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail {
		return false, drydock.Errorf(drydock.EUNAVAILABLE, "kernel down")
	}
	c.envs = append(c.envs, env)
	return true, nil
}

func (c *envCode) calls() [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]string(nil), c.envs...)
}

func execOut(t *testing.T, c *toolbox.Client, script string) string {
	t.Helper()
	var out bytes.Buffer
	if _, err := c.Exec(t.Context(), toolbox.ExecRequest{Command: script}, &out, &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func runOut(t *testing.T, c *toolbox.Client, session, command string) string {
	t.Helper()
	res, err := c.Run(t.Context(), session, toolbox.RunRequest{Command: command})
	if err != nil {
		t.Fatal(err)
	}
	return res.Output
}

func TestSetEnvReachesNewProcesses(t *testing.T) {
	t.Parallel()
	code := &envCode{}
	b := setup(t, func(c *Config) { c.Code = code })
	c := b.client(testToken)
	ctx := t.Context()

	// A shell started before the variables are set keeps its environment.
	if _, err := c.CreateSession(ctx, toolbox.SessionRequest{ID: "early"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.SetEnv(ctx, map[string]string{"CANARY": envCanary, "OTHER_SECRET": "second-value"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Names, ",") != "CANARY,OTHER_SECRET" || !res.KernelRestarted {
		t.Fatalf("SetEnv = %+v", res)
	}
	if got := execOut(t, c, `printf %s "$CANARY"`); got != envCanary {
		t.Fatalf("exec sees CANARY=%q", got)
	}
	if _, err := c.CreateSession(ctx, toolbox.SessionRequest{ID: "late"}); err != nil {
		t.Fatal(err)
	}
	if got := runOut(t, c, "late", `test "$CANARY" = "`+envCanary+`" && echo secret-ok`); !strings.Contains(got, "secret-ok") {
		t.Fatalf("a new session does not see the variable: %q", got)
	}
	if got := runOut(t, c, "early", `echo "[$CANARY]"`); !strings.Contains(got, "[]") {
		t.Fatalf("a shell started before SetEnv changed: %q", got)
	}
	if _, err := c.RestartSession(ctx, "early"); err != nil {
		t.Fatal(err)
	}
	if got := runOut(t, c, "early", `echo "[$CANARY]"`); !strings.Contains(got, envCanary) {
		t.Fatalf("a restarted shell does not see the variable: %q", got)
	}
	if calls := code.calls(); len(calls) != 1 || strings.Join(calls[0], " ") != "CANARY="+envCanary+" OTHER_SECRET=second-value" {
		t.Fatalf("code runner got %q", calls)
	}

	// The same variables again: nothing to do, the kernel keeps its state.
	res, err = c.SetEnv(ctx, map[string]string{"OTHER_SECRET": "second-value", "CANARY": envCanary})
	if err != nil || res.KernelRestarted || len(code.calls()) != 1 {
		t.Fatalf("repeated SetEnv = %+v, %v; code runner called %d times", res, err, len(code.calls()))
	}
	// New variables replace the old ones.
	if _, err := c.SetEnv(ctx, map[string]string{"ONLY_ONE": "value-three"}); err != nil {
		t.Fatal(err)
	}
	if got := execOut(t, c, `printf '%s|%s' "$CANARY" "$ONLY_ONE"`); got != "|value-three" {
		t.Fatalf("after a replacing SetEnv: %q", got)
	}
	// A request's own variables still win over the job's.
	var out bytes.Buffer
	c.Exec(ctx, toolbox.ExecRequest{Command: `printf %s "$ONLY_ONE"`, Env: map[string]string{"ONLY_ONE": "mine"}}, &out, &out)
	if out.String() != "mine" {
		t.Fatalf("request env: %q", out.String())
	}
}

func TestSetEnvKeepsValuesInMemoryOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.client(testToken)
	if _, err := c.SetEnv(t.Context(), map[string]string{"CANARY": envCanary}); err != nil {
		t.Fatal(err)
	}
	execOut(t, c, "true")
	if _, err := c.CreateSession(t.Context(), toolbox.SessionRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	runOut(t, c, "s", "true")
	if v, ok := os.LookupEnv("CANARY"); ok {
		t.Fatalf("toolboxd's own environment has CANARY=%s", v)
	}
	// Neither the workspace nor the state directory holds it.
	for _, dir := range []string{b.ws, b.srv.stateDir} {
		if hit := grepDir(t, dir, envCanary); hit != "" {
			t.Fatalf("%s holds the value", hit)
		}
	}
}

func grepDir(t *testing.T, dir, s string) string {
	t.Helper()
	var hit string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := dir + "/" + e.Name()
		if e.IsDir() {
			if h := grepDir(t, p, s); h != "" {
				hit = h
			}
			continue
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(s)) {
			hit = p
		}
	}
	return hit
}

func TestSetEnvRefuses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.client(testToken)
	for name, env := range map[string]map[string]string{
		"bad name": {"1X": "value"},
		"reserved": {"PATH": "/evil"},
		"toolboxd": {"TOOLBOXD_TOKEN": "x"},
		"proxy":    {"https_proxy": "http://evil"},
		"NUL":      {"A": "a\x00b"},
		"too long": {"A": strings.Repeat("v", maxEnvValueLen+1)},
	} {
		_, err := c.SetEnv(t.Context(), env)
		if code := drydock.ErrorCode(err); code != drydock.EINVALID && code != drydock.ETOOLARGE {
			t.Errorf("%s: SetEnv = %v; want refused", name, err)
		}
	}
	if got := execOut(t, c, `printf %s "$A"`); got != "" {
		t.Fatalf("a refused SetEnv set A=%q", got)
	}
	if r := b.do("PUT", "/v1/env", toolbox.EnvRequest{}, "Authorization", "Bearer wrong"); r.status != http.StatusUnauthorized {
		t.Fatalf("PUT /v1/env with a wrong token: %d", r.status)
	}
}

func TestSetEnvRetriesAFailedKernel(t *testing.T) {
	t.Parallel()
	code := &envCode{fail: true}
	b := setup(t, func(c *Config) { c.Code = code })
	c := b.client(testToken)
	env := map[string]string{"CANARY": envCanary}
	if _, err := c.SetEnv(t.Context(), env); drydock.ErrorCode(err) != drydock.EUNAVAILABLE {
		t.Fatalf("SetEnv with a failing kernel = %v", err)
	}
	code.mu.Lock()
	code.fail = false
	code.mu.Unlock()
	res, err := c.SetEnv(t.Context(), env)
	if err != nil || !res.KernelRestarted || len(code.calls()) != 1 {
		t.Fatalf("retry = %+v, %v: the kernel must get the variables", res, err)
	}
}
