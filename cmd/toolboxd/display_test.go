package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock/toolbox"
)

// In a desktop sandbox every process toolboxd starts has DISPLAY, so what
// the agent runs from bash, Python or node appears on the desktop the
// computer tool sees: shells, one-shot commands, the Python kernel and node.
func TestDesktopProcessesHaveDisplay(t *testing.T) {
	t.Parallel()
	for _, bin := range []string{"Xvfb", "x11vnc", "xdotool", "fluxbox", "node"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed; run scripts/testenv/sandbox-tools.sh to test the desktop", bin)
		}
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import ipykernel").Run(); err != nil {
		t.Skip("Debian's ipykernel is not installed; run scripts/testenv/sandbox-tools.sh")
	}
	display := freeDisplay(t)
	want := ":" + strconv.Itoa(display)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	ep, logs, _ := start(t, []string{"-listen", "unix://" + filepath.Join(dir, "tb.sock"), "-workspace", ws, "-profile", "desktop"},
		map[string]string{"TOOLBOXD_TOKEN": "display-token", envDisplay: strconv.Itoa(display)})
	c := toolbox.New(ep, "display-token")
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// The core is ready before the display: wait for what is tested.
	if err := c.WaitReady(ctx, "display", "kernel"); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}

	// bash: a session, as the agent's bash tool uses, and a one-shot exec.
	if _, err := c.CreateSession(ctx, toolbox.SessionRequest{ID: "agent"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(ctx, "agent", toolbox.RunRequest{Command: `echo "DISPLAY=$DISPLAY"; xdotool getdisplaygeometry`})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(res.Output, "DISPLAY="+want+"\n") || !strings.Contains(res.Output, "1280 800") {
		t.Errorf("bash session: exit %d, output %q; want DISPLAY=%s and the display's geometry\n%s", res.ExitCode, res.Output, want, logs)
	}
	var out strings.Builder
	if r, err := c.Exec(ctx, toolbox.ExecRequest{Command: `xdotool getdisplaygeometry && echo "DISPLAY=$DISPLAY"`}, &out, &out); err != nil || r.ExitCode != 0 ||
		!strings.Contains(out.String(), "DISPLAY="+want+"\n") {
		t.Errorf("exec: %v %+v, output %q; want DISPLAY=%s", err, r, out.String(), want)
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
	if got := code("python", `import os; print("DISPLAY=" + os.environ.get("DISPLAY", ""))`); !strings.Contains(got, "DISPLAY="+want) {
		t.Errorf("python kernel: %q, want DISPLAY=%s", got, want)
	}
	if got := code("javascript", `console.log("DISPLAY=" + (process.env.DISPLAY || ""))`); !strings.Contains(got, "DISPLAY="+want) {
		t.Errorf("node: %q, want DISPLAY=%s", got, want)
	}
	if got := code("typescript", `const d: string = process.env.DISPLAY ?? ""; console.log("DISPLAY=" + d)`); !strings.Contains(got, "DISPLAY="+want) &&
		!strings.Contains(got, "typescript is not installed") {
		t.Errorf("typescript: %q, want DISPLAY=%s", got, want)
	}
}

// A headless sandbox has no display, and its processes are not told of one.
func TestHeadlessProcessesHaveNoDisplay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	ep, _, _ := start(t, []string{"-listen", "unix://" + filepath.Join(dir, "tb.sock"), "-workspace", ws, "-services", "none"},
		map[string]string{"TOOLBOXD_TOKEN": "headless-token"})
	c := toolbox.New(ep, "headless-token")
	defer c.Close()
	var out strings.Builder
	if _, err := c.Exec(t.Context(), toolbox.ExecRequest{Command: `echo "DISPLAY=${DISPLAY-unset}"`}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if want := "DISPLAY=" + envOrUnset("DISPLAY"); !strings.Contains(out.String(), want) {
		t.Errorf("headless exec: %q, want %s (toolboxd's own environment, nothing added)", out.String(), want)
	}
}

func envOrUnset(k string) string {
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return "unset"
}

func TestDisplayNumber(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"": 0, "1": 1, ":7": 7, "99": 99} {
		if got, err := displayNumber(in); err != nil || got != want {
			t.Errorf("%q: got %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"0", "-1", "x", ":", "1.0", "70000"} {
		if _, err := displayNumber(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// freeDisplay picks a display number that no X server on this machine uses,
// so that tests run in parallel with each other and with other packages.
func freeDisplay(t testing.TB) int {
	t.Helper()
	for range 100 {
		n := 300 + rand.IntN(20000)
		_, errSock := os.Stat(fmt.Sprintf("/tmp/.X11-unix/X%d", n))
		_, errLock := os.Stat(fmt.Sprintf("/tmp/.X%d-lock", n))
		if os.IsNotExist(errSock) && os.IsNotExist(errLock) {
			return n
		}
	}
	t.Fatal("no free X display number")
	return 0
}
