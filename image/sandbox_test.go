package image_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/image"
	"github.com/drydockhq/drydock/runtime/docker"
	"github.com/drydockhq/drydock/toolbox"
)

// The image can do the example tasks: in a real desktop sandbox on Docker
// and on Podman (uid 1000, read-only root, no capabilities, the engine's seccomp, no
// network), as the agent's tools reach it, node, npm, npx and tsc run and
// npm installs and builds packages; bash, Python and node have DISPLAY; Tk
// and Chromium open windows on the desktop. The image is
// DRYDOCK_TEST_IMAGE_DESKTOP with this tree's toolboxd layered on (a tag of
// its own; drydock-sandbox:desktop does not move).
func TestDesktopSandboxCanDoTheExampleTasks(t *testing.T) {
	t.Parallel()
	for _, e := range []struct{ name, env string }{{"docker", "DRYDOCK_TEST_DOCKER_HOST"}, {"podman", "DRYDOCK_TEST_PODMAN_HOST"}} {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			host := os.Getenv(e.env)
			base := os.Getenv("DRYDOCK_TEST_IMAGE_DESKTOP")
			if host == "" || base == "" {
				t.Skipf("set %s and DRYDOCK_TEST_IMAGE_DESKTOP (drydock image build --profile desktop makes it) to check the image in a real %s sandbox", e.env, e.name)
			}
			exampleTasks(t, host, base, e.name)
		})
	}
}

func exampleTasks(t *testing.T, host, base, engine string) {
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "toolboxd")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "../cmd/toolboxd")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build toolboxd: %v\n%s", err, out)
	}
	img, err := image.WithToolboxd(ctx, image.Options{Profile: drydock.ProfileDesktop, Toolboxd: bin, DockerHost: host}, base)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := docker.New(docker.Options{Host: host, ServerID: "image-test-" + engine, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	jobID := "0193dddd-0000-7000-8000-00000000150" + map[string]string{"docker": "1", "podman": "2"}[engine]
	sb, err := rt.Create(ctx, drydock.SandboxSpec{JobID: jobID, Image: img, Profile: drydock.ProfileDesktop,
		Labels: map[string]string{drydock.LabelJob: jobID}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer dcancel()
		if err := rt.Destroy(dctx, sb.ID); err != nil {
			t.Errorf("destroy sandbox: %v", err)
		}
	}()
	c := toolbox.New(sb.Endpoint, sb.Token)
	defer c.Close()
	if err := c.WaitReady(ctx, "display", "window_manager", "kernel"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSession(ctx, toolbox.SessionRequest{ID: "agent"}); err != nil {
		t.Fatal(err)
	}
	bash := func(command string) string {
		t.Helper()
		res, err := c.Run(ctx, "agent", toolbox.RunRequest{Command: command, Timeout: drydock.Duration(3 * time.Minute),
			IdleTimeout: drydock.Duration(3 * time.Minute), MaxOutput: 100000})
		if err != nil {
			t.Fatalf("%s: %v", command, err)
		}
		if res.ExitCode != 0 {
			t.Errorf("%s: exit %d\n%s", command, res.ExitCode, res.Output)
		}
		return res.Output
	}

	// The versions the system prompt promises.
	out := bash(`node --version; npm --version; npx --version; tsc --version; python3 --version`)
	if !strings.HasPrefix(out, "v"+image.NodeVersion()+"\n") {
		t.Errorf("node --version: %q, want v%s", out, image.NodeVersion())
	}
	// npm works on a read-only root: a package made here is packed, installed
	// into a project (and its bin run with npx) and globally (the prefix is in
	// the home); nothing needs the network.
	bash(`set -e; mkdir -p /tmp/hello/bin && cd /tmp/hello
printf '%s' '{"name":"hello-drydock","version":"1.0.0","bin":{"hello-drydock":"bin/hello.js"}}' > package.json
printf '#!/usr/bin/env node\nconsole.log("hello from npm")\n' > bin/hello.js
npm pack --silent >/dev/null`)
	out = bash(`set -e; mkdir -p /workspace/app && cd /workspace/app && npm init -y >/dev/null &&
npm install --no-audit --no-fund --offline /tmp/hello/hello-drydock-1.0.0.tgz >/dev/null && npx hello-drydock &&
npm install -g --no-audit --no-fund --offline /tmp/hello/hello-drydock-1.0.0.tgz >/dev/null && hello-drydock && command -v hello-drydock`)
	if strings.Count(out, "hello from npm") != 2 || !strings.Contains(out, "/home/agent/.local/bin/hello-drydock") {
		t.Errorf("npm install, npx and a global install: %q", out)
	}
	// tsc type-checks and emits.
	out = bash(`set -e; cd /workspace/app && printf 'const n: number = 41;\nconsole.log(n + 1);\n' > main.ts && tsc --strict main.ts && node main.js
printf 'const s: string = 1;\n' > bad.ts; tsc --noEmit bad.ts || echo "tsc refused"`)
	if !strings.Contains(out, "42") || !strings.Contains(out, "TS2322") || !strings.Contains(out, "tsc refused") {
		t.Errorf("tsc: %q", out)
	}

	// DISPLAY from bash, Python and node: the desktop is theirs.
	if out := bash(`xdotool getdisplaygeometry`); !strings.Contains(out, "1280 800") {
		t.Errorf("xdotool getdisplaygeometry from bash: %q", out)
	}
	for lang, src := range map[string]string{
		"python":     `import os; print("DISPLAY=" + os.environ.get("DISPLAY", ""))`,
		"javascript": `console.log("DISPLAY=" + (process.env.DISPLAY || ""))`,
	} {
		res, err := c.RunCode(ctx, toolbox.CodeRequest{Language: lang, Code: src})
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for _, o := range res.Outputs {
			text.WriteString(o.Text)
		}
		if !strings.Contains(text.String(), "DISPLAY=:") {
			t.Errorf("%s: %q, want DISPLAY set", lang, text.String())
		}
	}
	// Tk opens a window on the display (a Python GUI todo app would).
	out = bash(`python3 -c 'import tkinter; r = tkinter.Tk(); r.title("tk-drydock"); r.update(); print("tk", r.winfo_screenwidth()); r.destroy()'`)
	if !strings.Contains(out, "tk 1280") {
		t.Errorf("tkinter: %q", out)
	}
	// Chromium, as the agent, shows a page on the desktop: its window is
	// titled after the page.
	bash(`printf '<title>drydock-browser-check</title><h1>hello</h1>' > /workspace/page.html
(chromium file:///workspace/page.html >/tmp/chromium.log 2>&1 &)`)
	// Searched again each second rather than with --sync: xdotool gives
	// up (BadWindow) when a window it walks is destroyed meanwhile, which
	// Chromium's short-lived windows at start do now and then.
	res, err := c.Run(ctx, "agent", toolbox.RunRequest{Command: `for i in $(seq 90); do xdotool search --onlyvisible --name drydock-browser-check >/dev/null 2>&1 && { echo window-found; exit 0; }; sleep 1; done; tail -20 /tmp/chromium.log; exit 1`,
		Timeout: drydock.Duration(2 * time.Minute), IdleTimeout: drydock.Duration(2 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(res.Output, "window-found") {
		t.Errorf("chromium did not show the page: exit %d\n%s", res.ExitCode, res.Output)
	}
	shot, err := c.Screenshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot with chromium: %d bytes", len(shot.PNG))
}
