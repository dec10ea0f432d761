package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/llm"
	"github.com/drydockhq/drydock/llm/llmtest"
)

// Pinned, so that the test does the same thing every day; all of them
// support the sandbox's Node 24.
const (
	createViteVersion = "9.3.0"
	vitestVersion     = "5.1.1"
	jsdomVersion      = "31.0.1"
)

// appBackground is the page colour of testdata/react-todo/src/index.css: a
// screenshot where it fills much of the screen shows the app's own page.
var appBackground = [3]uint8{0x2a, 0x9d, 0x8f}

// "Build me a todo app in React", done for real on a desktop sandbox: the
// scripted model (through the OpenAI-compatible client of the production
// agent) scaffolds a React + TypeScript app with create-vite, writes the
// todo components and their tests (testdata/react-todo), installs the
// packages through the egress proxy from the npm registry this machine
// reaches, builds the app, runs its tests, serves it with vite preview,
// reads the rendered page with headless Chromium, opens it in the desktop's
// Chromium and takes a screenshot with the computer tool. The archive then
// holds the project with its dist/.
//
// The registry is the one the host's npm is configured with, read at run
// time, and never named here. Networks like this one inspect TLS and
// resolve the registry to a non-public address: the host's added CAs go to
// --sandbox-ca and the registry's addresses, each alone, to --egress-private.
func TestAgentBuildsReactTodoAppFromTheRegistry(t *testing.T) {
	t.Parallel()
	if os.Getenv("DRYDOCK_TEST_E2E") == "" {
		t.Skip("DRYDOCK_TEST_E2E not set: this test downloads packages from the npm registry (make test sets it)")
	}
	if os.Getenv("DRYDOCK_TEST_DOCKER_HOST") == "" {
		t.Skip("DRYDOCK_TEST_DOCKER_HOST not set: no Docker engine to run a desktop sandbox on (make test starts one)")
	}
	reg := hostNPMRegistry(t)
	creates := reactTodoFiles(t)

	// The agent's shell keeps its variables from call to call: the
	// registry the host uses (a mirror, when the host is set up with one),
	// and npm's cache in /tmp, which is larger than the agent's home.
	setup := fmt.Sprintf("export npm_config_registry=%s npm_config_cache=/tmp/npm-cache npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false; ",
		shellQuote(reg.url))
	bash := func(command string, timeout int) llm.ToolCall {
		in, _ := json.Marshal(map[string]any{"command": command, "timeout": timeout})
		return llm.ToolCall{Name: "bash", Input: in}
	}
	turns := []llmtest.Turn{
		{Text: "I'll scaffold a React + TypeScript app with Vite.", ToolCalls: []llm.ToolCall{
			bash(setup+"node --version && npm create -y vite@"+createViteVersion+" todo-app -- --template react-ts --no-interactive </dev/null && "+
				"cd todo-app && rm -r src/App.tsx src/App.css src/index.css src/assets && ls src", 300),
		}},
		{Text: "Now the todo state, the components, the styles and the tests.", ToolCalls: append(creates,
			llmtest.Call("str_replace_based_edit_tool", `{"command": "str_replace", "path": "/workspace/todo-app/index.html", "old_str": "<title>todo-app</title>", "new_str": "<title>Drydock Todos</title>"}`)),
		},
		{ToolCalls: []llm.ToolCall{bash("cd /workspace/todo-app && npm install && npm install -D vitest@"+vitestVersion+" jsdom@"+jsdomVersion+
			` && npm pkg set scripts.test="vitest run" && echo INSTALLED`, 600)}},
		{ToolCalls: []llm.ToolCall{bash("npm run build 2>&1 | tail -n 8 && ls dist", 300)}},
		{ToolCalls: []llm.ToolCall{bash("npm test 2>&1 | tail -n 8", 300)}},
		{Text: "Built and tested; let me serve it and look at it.", ToolCalls: []llm.ToolCall{bash(
			"(setsid nohup npx vite preview --port 4173 --strictPort >/tmp/preview.log 2>&1 &); "+
				"for i in $(seq 150); do curl -fsS http://localhost:4173/ >/dev/null 2>&1 && break; sleep 0.2; done; "+
				"curl -fsS http://localhost:4173/ | grep -o '<title>[^<]*</title>' || cat /tmp/preview.log", 120)}},
		// What the browser renders, as text: React ran and drew the list.
		{ToolCalls: []llm.ToolCall{bash("timeout 90 chromium --headless --disable-background-networking --user-data-dir=/tmp/chromium-headless --virtual-time-budget=5000 --dump-dom http://localhost:4173/ 2>/dev/null | "+
			"grep -o -e '<title>[^<]*</title>' -e 'Scaffold the app with Vite' -e '[0-9]* items\\? left'", 120)}},
		// And on the desktop, in a window filling the screen.
		{ToolCalls: []llm.ToolCall{bash("read W H < <(xdotool getdisplaygeometry); "+
			"(setsid chromium --disable-background-networking --user-data-dir=/tmp/chromium-ui --window-position=0,0 --window-size=$W,$H --new-window http://localhost:4173/ >/tmp/chromium.log 2>&1 &); "+
			"for i in $(seq 300); do xdotool search --onlyvisible --name 'Drydock Todos' >/dev/null 2>&1 && break; sleep 0.2; done; sleep 2; "+
			"xdotool search --onlyvisible --name 'Drydock Todos' >/dev/null && echo 'a browser window shows Drydock Todos' || tail -n 20 /tmp/chromium.log", 120)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("computer", `{"action": "screenshot"}`)}},
		// The dependencies are not the work: npm install brings them back.
		{ToolCalls: []llm.ToolCall{bash("rm -rf node_modules && ls -A", 120)}},
		{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"summary": "todo-app/: a React + TypeScript todo app scaffolded with Vite; npm run build writes dist/, npm test runs 5 vitest tests (jsdom); run npm install first."}`)}},
	}

	extra := []string{}
	for _, a := range reg.addrs {
		extra = append(extra, "--egress-private", a)
	}
	for _, ca := range hostAddedCAs(t) {
		extra = append(extra, "--sandbox-ca", ca)
	}
	e := newAgentEnv(t, "docker", "DRYDOCK_TEST_DOCKER_HOST", "openai", llmtest.Options{Turns: turns}, extra...)
	// A model name the agent knows takes images, so that the screenshot
	// reaches the model (an unknown OpenAI-compatible model is sent none).
	body, _ := json.Marshal(map[string]any{
		"task": "Build me a todo app in React", "profile": "desktop", "timeout": "10m", "egress": []string{reg.hostPort},
		"model": "gpt-4o-mini",
	})
	id, j := e.run(string(body), 6*time.Minute)
	if j.Status != drydock.StatusComplete {
		t.Fatalf("job: %s %q\n%s", j.Status, j.Error, e.logs)
	}

	reqs := e.model.Requests()
	wasFed(t, reqs, 2, ok("main.tsx"))
	var created []fed
	for range creates {
		created = append(created, ok("File created successfully at: /workspace/todo-app/"))
	}
	wasFed(t, reqs, 3, append(created, ok("has been edited"))...)
	wasFed(t, reqs, 4, ok("INSTALLED"))
	wasFed(t, reqs, 5, ok("built in"))
	wasFed(t, reqs, 6, ok("5 passed"))
	wasFed(t, reqs, 7, ok("<title>Drydock Todos</title>"))
	wasFed(t, reqs, 8, ok("Scaffold the app with Vite"))
	if out := toolOutput(reqs, 8); !strings.Contains(out, "1 item left") {
		t.Errorf("headless Chromium's DOM of the served app lacks what React renders:\n%s", out)
	}
	wasFed(t, reqs, 9, ok("a browser window shows Drydock Todos"))
	wasFed(t, reqs, 10, ok("Screenshot of the screen"))
	if len(reqs) >= 10 {
		checkAppScreenshot(t, reqs[9].LastUser())
	}

	// The archive is the project, built: sources, tests, dist/, no
	// node_modules.
	files := e.archive(id)
	for _, want := range []string{"package.json", "package-lock.json", "index.html", "vite.config.ts", "tsconfig.app.json",
		"src/main.tsx", "src/App.tsx", "src/todos.ts", "tests/App.test.tsx", "dist/index.html"} {
		if _, ok := files["todo-app/"+want]; !ok {
			t.Errorf("the archive lacks todo-app/%s", want)
		}
	}
	var bundle bool
	for name, content := range files {
		if strings.HasPrefix(name, "todo-app/node_modules/") {
			t.Fatalf("the archive holds node_modules (%s)", name)
		}
		bundle = bundle || strings.HasPrefix(name, "todo-app/dist/assets/") && strings.HasSuffix(name, ".js") && strings.Contains(content, "Clear completed")
	}
	if !bundle {
		t.Error("dist/assets holds no JavaScript bundle with the app's components")
	}
	if !strings.Contains(files["todo-app/dist/index.html"], "<title>Drydock Todos</title>") {
		t.Errorf("dist/index.html:\n%s", files["todo-app/dist/index.html"])
	}
	var pkg struct {
		Scripts         map[string]string `json:"scripts"`
		Dependencies    map[string]string `json:"dependencies"`
		DevDependencies map[string]string `json:"devDependencies"`
	}
	if err := json.Unmarshal([]byte(files["todo-app/package.json"]), &pkg); err != nil {
		t.Fatalf("package.json: %v", err)
	}
	if pkg.Scripts["test"] != "vitest run" || pkg.Scripts["build"] == "" || pkg.Dependencies["react"] == "" || pkg.DevDependencies["vitest"] == "" || pkg.DevDependencies["jsdom"] == "" {
		t.Errorf("package.json: scripts %v, dependencies %v, devDependencies %v", pkg.Scripts, pkg.Dependencies, pkg.DevDependencies)
	}
	e.noSandboxLeft(id)
}

// npmRegistry is the registry the host's npm uses.
type npmRegistry struct {
	url      string   // as npm prints it
	hostPort string   // the job's egress
	addrs    []string // what its host resolves to here
}

// hostNPMRegistry reads the host's npm registry and checks, in bounded
// time, that it answers from here; the test skips otherwise.
func hostNPMRegistry(t *testing.T) npmRegistry {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed on this machine: no registry configuration to read")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "npm", "config", "get", "registry").Output()
	if err != nil {
		t.Skipf("npm config get registry: %v", err)
	}
	raw := strings.TrimSpace(string(out))
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" || (u.Scheme != "https" && u.Scheme != "http") {
		t.Skipf("npm's registry %q is not an http(s) URL", raw)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	reg := npmRegistry{url: raw, hostPort: net.JoinHostPort(u.Hostname(), port)}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil || len(ips) == 0 {
		t.Skipf("npm's registry does not resolve here: %v", err)
	}
	// The proxy refuses non-public addresses unless opened; opening a public
	// one changes nothing, so every address goes, each alone.
	for _, ip := range ips {
		reg.addrs = append(reg.addrs, ip.Unmap().String())
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", strings.TrimSuffix(raw, "/")+"/create-vite", nil)
	req.Header.Set("Accept", "application/vnd.npm.install-v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Skipf("npm's registry does not answer from this machine: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Skipf("npm's registry answers %s for create-vite", resp.Status)
	}
	return reg
}

// hostAddedCAs lists the CAs this machine added to its own trust store
// (Debian's place for them), which a sandbox must trust to reach what the
// host reaches through a network that inspects TLS.
func hostAddedCAs(t *testing.T) []string {
	t.Helper()
	var cas []string
	err := filepath.WalkDir("/usr/local/share/ca-certificates", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && strings.HasSuffix(p, ".crt") {
			cas = append(cas, p)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("the host's added CAs: %v", err)
	}
	return cas
}

// reactTodoFiles are the model's create calls for testdata/react-todo,
// placed into the scaffolded project.
func reactTodoFiles(t *testing.T) []llm.ToolCall {
	t.Helper()
	const root = "testdata/react-todo"
	var creates []llm.ToolCall
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		in, _ := json.Marshal(map[string]string{"command": "create", "path": "/workspace/todo-app/" + filepath.ToSlash(rel), "file_text": string(b)})
		creates = append(creates, llm.ToolCall{Name: "str_replace_based_edit_tool", Input: in})
		return nil
	})
	if err != nil || len(creates) != 4 {
		t.Fatalf("read %s: %v (%d files)", root, err, len(creates))
	}
	return creates
}

// toolOutput is the first tool result that request n (1-based) carries.
func toolOutput(reqs []*llmtest.Request, n int) string {
	if len(reqs) < n || len(reqs[n-1].LastUser().ToolResults) == 0 {
		return ""
	}
	return reqs[n-1].LastUser().ToolResults[0].Output
}

// checkAppScreenshot checks that the computer tool's screenshot shows the
// app: its page colour over much of the screen and its white card on it.
// OpenAI's tool messages carry no images, so the client sends the
// screenshot in a user message after them; other providers put it in the
// tool result.
func checkAppScreenshot(t *testing.T, m llm.Message) {
	t.Helper()
	images := m.Images
	for _, r := range m.ToolResults {
		images = append(images, r.Images...)
	}
	if len(images) != 1 || images[0].MediaType != "image/png" {
		t.Fatalf("the screenshot did not reach the model as one PNG (%d images)", len(images))
	}
	img, err := png.Decode(bytes.NewReader(images[0].Data))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	near := func(a uint32, b uint8) bool { d := int(a>>8) - int(b); return d > -6 && d < 6 }
	var page, white, total int
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 4 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 4 {
			r, g, b, _ := img.At(x, y).RGBA()
			total++
			switch {
			case near(r, appBackground[0]) && near(g, appBackground[1]) && near(b, appBackground[2]):
				page++
			case r>>8 == 255 && g>>8 == 255 && b>>8 == 255:
				white++
			}
		}
	}
	t.Logf("screenshot %dx%d: %d of %d sampled pixels in the app's page colour, %d white", bounds.Dx(), bounds.Dy(), page, total, white)
	if page < total/5 || white < total/100 {
		t.Errorf("the screenshot does not show the app (%d of %d sampled pixels in its page colour, %d white)", page, total, white)
	}
}

// shellQuote quotes s for bash.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
