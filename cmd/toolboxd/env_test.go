package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock/toolbox"
)

// The job's variables reach the Python kernel that started at boot (it is
// restarted), node and shells; toolboxd's log and environment never show
// a value.
func TestSetEnvReachesCode(t *testing.T) {
	t.Parallel()
	if err := exec.Command("/usr/bin/python3", "-c", "import ipykernel").Run(); err != nil {
		t.Skip("Debian's ipykernel is not installed; run scripts/testenv/sandbox-tools.sh")
	}
	const canary = "toolboxd-env-canary-0d7e"
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	ep, logs, stop := start(t, []string{"-listen", "unix://" + filepath.Join(dir, "tb.sock"), "-workspace", ws},
		map[string]string{"TOOLBOXD_TOKEN": "env-daemon-token"})
	c := toolbox.New(ep, "env-daemon-token")
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	// Python state from before the variables were set is lost with the
	// restart: that is why the runner sets them before the first call.
	if _, err := c.RunCode(ctx, toolbox.CodeRequest{Language: "python", Code: "x = 1"}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	res, err := c.SetEnv(ctx, map[string]string{"CANARY": canary})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("SetEnv with a kernel restart took %s", time.Since(t0).Round(time.Millisecond))
	if !res.KernelRestarted {
		t.Errorf("SetEnv did not restart the kernel: %+v", res)
	}
	code := func(lang, src string) string {
		t.Helper()
		r, err := c.RunCode(ctx, toolbox.CodeRequest{Language: lang, Code: src})
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		for _, o := range r.Outputs {
			out.WriteString(o.Text)
		}
		return out.String()
	}
	if got := code("python", `import os; print(os.environ.get("CANARY") == "`+canary+`" and "secret-ok")`); !strings.Contains(got, "secret-ok") {
		t.Errorf("python: %q", got)
	}
	if got := code("python", `print("x" in globals())`); !strings.Contains(got, "False") {
		t.Errorf("the kernel kept its state: %q", got)
	}
	if got := code("javascript", `console.log(process.env.CANARY === "`+canary+`" ? "secret-ok" : "missing")`); !strings.Contains(got, "secret-ok") {
		t.Errorf("node: %q", got)
	}
	var out strings.Builder
	if _, err := c.Exec(ctx, toolbox.ExecRequest{Command: `test "$CANARY" = "` + canary + `" && echo secret-ok`}, &out, &out); err != nil || !strings.Contains(out.String(), "secret-ok") {
		t.Errorf("exec: %q %v", out.String(), err)
	}
	if _, ok := os.LookupEnv("CANARY"); ok {
		t.Error("toolboxd's own environment has CANARY")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), canary) {
		t.Error("the value appears in toolboxd's log")
	}
	if !strings.Contains(logs.String(), `"CANARY"`) {
		t.Error("the log does not name the variable that was set")
	}
}
