package e2e_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/desktop"
	"github.com/drydockhq/drydock/toolbox"
	tbserver "github.com/drydockhq/drydock/toolbox/server"
)

// requireChromium returns Debian's chromium (or DRYDOCK_TEST_CHROMIUM), or
// skips the test.
func requireChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DRYDOCK_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed: apt-get install chromium to run the browser tests")
	return ""
}

// newBrowser starts a headless chromium with a fresh profile and returns a
// tab's context; everything stops when the test ends.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := requireChromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1366, 860),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// within bounds one browser step; the browser itself lives on.
func within(t *testing.T, ctx context.Context, d time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := chromedp.Do(sctx, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// waitJS waits until the expression is truthy.
func waitJS(t *testing.T, ctx context.Context, d time.Duration, js string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[any](js, chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText.slice(0, 3000)"))
		t.Fatalf("waiting for %s: %v\npage text:\n%s", js, err, body)
	}
}

// saveScreenshot writes a PNG of the page into DRYDOCK_TEST_SCREENSHOTS (the
// docs' pictures are made this way) and returns it.
func saveScreenshot(t *testing.T, ctx context.Context, name string) []byte {
	t.Helper()
	data, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if dir := os.Getenv("DRYDOCK_TEST_SCREENSHOTS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Errorf("save screenshot: %v", err)
		}
	}
	return data
}

// checkAccessible fails on form controls without a label and buttons or
// links without a name: the page must work with a keyboard and a screen
// reader.
func checkAccessible(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	bad := eval[[]string](t, ctx, `(() => {
		const bad = [];
		for (const el of document.querySelectorAll("input, select, textarea")) {
			if (!el.labels?.length && !el.getAttribute("aria-label")) bad.push("unlabelled " + el.outerHTML.slice(0, 80));
		}
		for (const el of document.querySelectorAll("button, a[href]")) {
			if (!(el.innerText || el.getAttribute("aria-label") || "").trim()) bad.push("unnamed " + el.outerHTML.slice(0, 80));
		}
		for (const el of document.querySelectorAll("[onclick], div[tabindex], span[tabindex]")) bad.push("clickable non-button " + el.outerHTML.slice(0, 80));
		return bad;
	})()`)
	for _, b := range bad {
		t.Errorf("%s: %s", page, b)
	}
}

// From the form to the downloaded archive, in one page that never reloads:
// schedule a task, watch its steps arrive, browse the workspace, download.
func TestBrowserJobFlow(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	s := newServer(t)
	s.start()

	within(t, ctx, 20*time.Second,
		chromedp.Navigate(s.url()+"/"),
		chromedp.WaitVisible(chromedp.CSS("#task")))
	checkAccessible(t, ctx, "jobs page")
	within(t, ctx, 20*time.Second,
		chromedp.SendKeys(chromedp.CSS("#task"), "Write notes about the harbour [fake:steps=6] [fake:delay=600ms]"),
		chromedp.SetValue(chromedp.CSS("#model"), "scripted-model"),
		chromedp.Click(chromedp.CSS("form.new-task button[type=submit]")),
	)
	waitJS(t, ctx, 10*time.Second, `location.pathname.startsWith("/jobs/")`)
	id := strings.TrimPrefix(eval[string](t, ctx, "location.pathname"), "/jobs/")
	// A marker on the window survives only if the page is never reloaded.
	eval[bool](t, ctx, "window.__noReload = true")
	waitJS(t, ctx, 15*time.Second, `document.querySelectorAll("#timeline .event-tool_call").length >= 2`)
	early := eval[int](t, ctx, `document.querySelectorAll("#timeline .event-tool_call").length`)
	waitJS(t, ctx, 30*time.Second, `document.querySelectorAll("#timeline .event-tool_call").length == 6`)
	if early >= 6 {
		t.Errorf("all %d steps were there at once: nothing arrived live", early)
	}
	waitJS(t, ctx, 30*time.Second, `document.querySelector(".job-head .pill")?.textContent == "complete" && document.getElementById("download-targz")`)
	if !eval[bool](t, ctx, "window.__noReload === true") {
		t.Error("the page reloaded")
	}
	text := eval[string](t, ctx, `document.getElementById("timeline").innerText`)
	for _, want := range []string{"str_replace_based_edit_tool", "notes/step-006.md", "File created successfully", "Completed 6 scripted steps"} {
		if !strings.Contains(text, want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
	if steps := eval[string](t, ctx, `document.getElementById("steps").textContent`); steps != "6" {
		t.Errorf("steps shown: %q", steps)
	}

	// The workspace tree, then a file in it.
	within(t, ctx, 15*time.Second,
		chromedp.Click(chromedp.CSS(`button.tree-dir[data-path="notes"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button.tree-file[data-path="notes/step-002.md"]`)),
		chromedp.Click(chromedp.CSS(`button.tree-file[data-path="notes/step-002.md"]`)),
	)
	waitJS(t, ctx, 10*time.Second, `document.querySelector(".file-text")?.textContent.includes("# Step 2")`)
	checkAccessible(t, ctx, "job page")
	eval[any](t, ctx, "window.scrollTo(0, 0)")
	saveScreenshot(t, ctx, "ui-job.png")

	// The download button hands over the real archive.
	dl := t.TempDir()
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dl,
	}); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS("#download-targz")))
	archive := filepath.Join(dl, id+".tar.gz")
	var data []byte
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if b, err := os.ReadFile(archive); err == nil && len(b) > 0 {
			if names := tarNames(b); slices.Contains(names, "SUMMARY.md") {
				data = b
				break
			}
		}
	}
	if data == nil {
		entries, _ := os.ReadDir(dl)
		t.Fatalf("no complete %s downloaded; the download dir holds %v", archive, entries)
	}
	_, direct := s.do("GET", "/v1/jobs/"+id+"/artifact.tar.gz", "", "")
	if !bytes.Equal(data, direct) {
		t.Errorf("downloaded archive (%d bytes) differs from the API's (%d bytes)", len(data), len(direct))
	}

	// Other jobs in other states, made through the API.
	hanging := s.schedule(`{"task": "Keep the lights on [fake:steps=2] [fake:hang]", "profile": "desktop"}`)
	failing := s.schedule(`{"task": "Refactor the tide tables [fake:steps=1] [fake:delay=10ms] [fake:fail=tests failed]"}`)
	s.waitTerminal(failing, 20*time.Second)
	cancelled := s.schedule(`{"task": "Paint the lighthouse [fake:hang]"}`)
	for deadline := time.Now().Add(20 * time.Second); s.status(hanging).Steps < 2 || s.status(cancelled).Status != drydock.StatusRunning; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the other jobs did not start")
		}
	}
	s.do("POST", "/v1/jobs/"+cancelled+"/cancel", "", "")
	s.waitTerminal(cancelled, 20*time.Second)
	t.Cleanup(func() { s.do("POST", "/v1/jobs/"+hanging+"/cancel", "", "") })

	// Back to the list, through the link: the job is there, and the filter
	// works.
	within(t, ctx, 10*time.Second,
		chromedp.Click(chromedp.CSS(`main a[href="/"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-id="`+id+`"]`)),
	)
	row := eval[string](t, ctx, `document.querySelector('tr[data-id="`+id+`"]').innerText`)
	if !strings.Contains(row, "complete") || !strings.Contains(row, "Write notes about the harbour") {
		t.Errorf("jobs row: %q", row)
	}
	filter := func(status string) {
		t.Helper()
		eval[bool](t, ctx, fmt.Sprintf(`(() => { const s = document.getElementById("status-filter"); s.value = %q; return s.dispatchEvent(new Event("change")); })()`, status))
	}
	filter("running")
	waitJS(t, ctx, 10*time.Second, `document.querySelector('tr[data-id="`+hanging+`"]') && !document.querySelector('tr[data-id="`+id+`"]')`)
	filter("")
	waitJS(t, ctx, 10*time.Second, `document.querySelector('tr[data-id="`+id+`"]') && document.querySelectorAll("tbody tr").length == 4`)
	if !eval[bool](t, ctx, "window.__noReload === true") {
		t.Error("the page reloaded on the way back")
	}
	saveScreenshot(t, ctx, "ui-jobs.png")
}

func tarNames(gz []byte) []string {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err != nil {
			if err != io.EOF {
				return nil
			}
			return names
		}
		names = append(names, h.Name)
	}
}

func createToken(t *testing.T, dataDir, name string) string {
	t.Helper()
	out, err := exec.Command(binary, "token", "create", "--data-dir", dataDir, "--name", name).Output()
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// With tokens, a visitor without one, or with another user's, can open
// neither the job nor its files nor its desktop; the owner can.
func TestBrowserAccessControl(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	s := newServer(t)
	alice := createToken(t, s.dataDir, "alice")
	bob := createToken(t, s.dataDir, "bob")
	s.start()
	code, body := s.do("POST", "/v1/jobs", alice, `{"task": "alice's secret work [fake:steps=1] [fake:delay=10ms]"}`)
	if code != 201 {
		t.Fatalf("schedule: %d %s", code, body)
	}
	var done drydock.Job
	json.Unmarshal(body, &done)
	code, body = s.do("POST", "/v1/jobs", alice, `{"task": "alice's desktop [fake:hang]", "profile": "desktop"}`)
	if code != 201 {
		t.Fatalf("schedule: %d %s", code, body)
	}
	var live drydock.Job
	json.Unmarshal(body, &live)
	t.Cleanup(func() { s.do("POST", "/v1/jobs/"+live.ID+"/cancel", alice, "") })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, body := s.do("GET", "/v1/jobs/"+done.ID, alice, "")
		var j drydock.Job
		json.Unmarshal(body, &j)
		if code == 200 && j.Status == drydock.StatusComplete && j.DownloadURL != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job not complete: %d %s", code, body)
		}
	}

	// An anonymous visitor: the desktop page refuses, and so do the API
	// routes the page would use.
	within(t, ctx, 10*time.Second, chromedp.Navigate(s.url()+"/jobs/"+live.ID+"/desktop"))
	if title := eval[string](t, ctx, "document.title"); !strings.Contains(title, "Unauthorized") {
		t.Errorf("anonymous desktop page: %q", title)
	}
	if n := eval[int](t, ctx, "document.querySelectorAll('canvas').length"); n != 0 {
		t.Errorf("anonymous visitor got %d canvases", n)
	}
	probe := func(tok string) map[string]any {
		js := fmt.Sprintf(`(async () => {
			const h = %q ? {Authorization: "Bearer " + %q} : {};
			const st = async (p, m = "GET") => (await fetch(p, {method: m, headers: h})).status;
			const ws = await new Promise((res) => {
				const w = new WebSocket(location.origin.replace("http", "ws") + "/jobs/%s/desktop/websockify", "binary");
				w.onopen = () => { w.close(); res("open"); };
				w.onerror = () => res("refused");
			});
			return {
				job: await st("/v1/jobs/%s"),
				files: await st("/v1/jobs/%s/files/SUMMARY.md"),
				archive: await st("/v1/jobs/%s/artifact.tar.gz"),
				link: await st("/v1/jobs/%s/desktop/link", "POST"),
				desktop: await st("/jobs/%s/desktop"),
				ws,
			};
		})()`, tok, tok, live.ID, done.ID, done.ID, done.ID, live.ID, live.ID)
		v, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("probe: %v", err)
		}
		return v
	}
	// Probe from the UI's own page, whose policy allows these requests.
	within(t, ctx, 10*time.Second, chromedp.Navigate(s.url()+"/"))
	for who, c := range map[string]struct {
		tok  string
		want map[string]any
	}{
		"anonymous": {"", map[string]any{"job": 401.0, "files": 401.0, "archive": 401.0, "link": 401.0, "desktop": 401.0, "ws": "refused"}},
		"bob":       {bob, map[string]any{"job": 404.0, "files": 404.0, "archive": 404.0, "link": 404.0, "desktop": 404.0, "ws": "refused"}},
	} {
		got := probe(c.tok)
		for k, want := range c.want {
			if got[k] != want {
				t.Errorf("%s: %s = %v, want %v", who, k, got[k], want)
			}
		}
	}

	// Bob's token in the UI: alice's job is not found, no file is shown.
	within(t, ctx, 10*time.Second, chromedp.Navigate(s.url()+"/"))
	eval[any](t, ctx, fmt.Sprintf("localStorage.setItem('drydock.token', %q)", bob))
	within(t, ctx, 10*time.Second, chromedp.Navigate(s.url()+"/jobs/"+done.ID))
	waitJS(t, ctx, 10*time.Second, `document.getElementById("job-h")?.textContent == "Job not found"`)
	if n := eval[int](t, ctx, `document.querySelectorAll(".tree button").length`); n != 0 {
		t.Errorf("bob sees %d files of alice's job", n)
	}
	// Alice's token: the same page shows the job and its files.
	eval[any](t, ctx, fmt.Sprintf("localStorage.setItem('drydock.token', %q)", alice))
	within(t, ctx, 10*time.Second, chromedp.Navigate(s.url()+"/jobs/"+done.ID))
	waitJS(t, ctx, 15*time.Second, `document.querySelector('button.tree-file[data-path="SUMMARY.md"]')`)
	// Anonymous again: the jobs page asks for a token.
	eval[any](t, ctx, "localStorage.removeItem('drydock.token')")
	within(t, ctx, 10*time.Second, chromedp.Navigate(s.url()+"/"))
	waitJS(t, ctx, 10*time.Second, `document.getElementById("token-form").classList.contains("needs-token")`)
	if n := eval[int](t, ctx, `document.querySelectorAll("tbody tr").length`); n != 0 {
		t.Errorf("anonymous visitor sees %d jobs", n)
	}
}

// A desktop job in a real sandbox: the canvas shows the sandbox's screen.
func TestBrowserDesktop(t *testing.T) {
	t.Parallel()
	host := os.Getenv("DRYDOCK_TEST_DOCKER_HOST")
	if host == "" {
		t.Skip("DRYDOCK_TEST_DOCKER_HOST not set: no engine to run a desktop sandbox on (make test starts one)")
	}
	image := os.Getenv("DRYDOCK_TEST_IMAGE_DESKTOP")
	if image == "" {
		image = "drydock-sandbox:desktop"
	}
	if out, err := exec.Command("docker", "-H", host, "image", "inspect", image).CombinedOutput(); err != nil {
		t.Skipf("cannot use image %s on %s (is the engine up? drydock image build --profile desktop makes the image): %s", image, host, strings.Join(strings.Fields(string(out)), " "))
	}
	ctx := newBrowser(t)
	s := newServer(t, "--node-id", "e2e-browser-desktop")
	for i, a := range s.args {
		if a == "local" && s.args[i-1] == "--runtime" {
			s.args[i] = "docker"
		}
	}
	s.args = append(s.args, "--docker-host", host, "--image-desktop", image)
	s.start()

	within(t, ctx, 20*time.Second,
		chromedp.Navigate(s.url()+"/"),
		chromedp.WaitVisible(chromedp.CSS("#task")),
		chromedp.SendKeys(chromedp.CSS("#task"), "Show the desktop [fake:steps=1] [fake:hang]"),
		chromedp.SetValue(chromedp.CSS("#profile"), "desktop"),
		chromedp.Click(chromedp.CSS("form.new-task button[type=submit]")),
	)
	waitJS(t, ctx, 10*time.Second, `location.pathname.startsWith("/jobs/")`)
	id := strings.TrimPrefix(eval[string](t, ctx, "location.pathname"), "/jobs/")
	t.Cleanup(func() { s.do("POST", "/v1/jobs/"+id+"/cancel", "", "") })
	waitJS(t, ctx, 3*time.Minute, `document.querySelector("#desktop-screen canvas") && document.querySelector(".desktop .pill")?.textContent == "connected"`)
	// Wait for a picture: a canvas of more than one colour.
	waitJS(t, ctx, time.Minute, `(() => {
		const c = document.querySelector("#desktop-screen canvas");
		if (!c || !c.width || !c.height) return false;
		const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		const seen = new Set();
		for (let i = 0; i < d.length; i += 4 * 97) seen.add(d[i] << 16 | d[i + 1] << 8 | d[i + 2]);
		return seen.size > 1;
	})()`)
	shot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("#desktop-screen")))
	if err != nil {
		t.Fatal(err)
	}
	if n := colours(t, shot); n < 2 {
		t.Errorf("the desktop screenshot has %d colours: blank", n)
	}
	if dir := os.Getenv("DRYDOCK_TEST_SCREENSHOTS"); dir != "" {
		saveScreenshot(t, ctx, "ui-desktop.png")
	}
	// Cancelling the job ends the desktop in the page.
	within(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS("#cancel")))
	waitJS(t, ctx, time.Minute, `document.querySelector(".desktop .pill")?.textContent.startsWith("ended")`)
}

func colours(t *testing.T, data []byte) int {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	return len(seen)
}

// desktopAdapter puts package desktop behind toolboxd's VNC route.
type desktopAdapter struct{ d *desktop.Desktop }

func (a desktopAdapter) Components(context.Context) []toolbox.Component {
	var cs []toolbox.Component
	for name, ok := range a.d.Ready() {
		cs = append(cs, toolbox.Component{Name: name, Ready: ok})
	}
	return cs
}

func (a desktopAdapter) Screenshot(context.Context) (*toolbox.Screenshot, error) {
	return nil, drydock.Errorf(drydock.ENOTIMPLEMENTED, "not used here")
}

func (a desktopAdapter) Do(context.Context, toolbox.DesktopAction) (*toolbox.DesktopResult, error) {
	return nil, drydock.Errorf(drydock.ENOTIMPLEMENTED, "not used here")
}

func (a desktopAdapter) ServeVNC(w http.ResponseWriter, r *http.Request) {
	a.d.VNCHandler().ServeHTTP(w, r)
}

// The job page's live desktop in a real browser, through the proxy, from a
// real Xvfb + fluxbox + x11vnc with a VNC password, without Docker: the API
// server runs in this process (the local runtime has no desktop) with the
// desktop behind a real toolboxd. The canvas shows the screen and the
// window opened on it; clicks reach the desktop only after "Take control".
func TestBrowserDesktopX11(t *testing.T) {
	t.Parallel()
	requireX11Tools(t, "xmessage")
	ctx := newBrowser(t)
	sockDir, err := os.MkdirTemp("", "dde2e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	const password = "pw-e2e-1"
	d := startX11Desktop(t, filepath.Join(sockDir, "vnc.sock"), password)
	wctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := d.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	win := exec.Command("xmessage", "-display", d.Display(), "-center", "Hello from the sandbox: this window was opened on its desktop.")
	if err := win.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { win.Process.Kill(); win.Wait() })

	// toolboxd with the desktop, and the API server that reaches it.
	workspace := t.TempDir()
	serveToolboxd(t, filepath.Join(sockDir, "tb.sock"), tbserver.Config{Workspace: workspace, Token: "tb-token", Desktop: desktopAdapter{d},
		StateDir: filepath.Join(sockDir, "state"), Profile: drydock.ProfileDesktop})
	sb := &drydock.Sandbox{ID: "sb-e2e-x11", State: drydock.SandboxRunning, Token: "tb-token", VNCPassword: password,
		Endpoint: drydock.Endpoint{Network: "unix", Address: filepath.Join(sockDir, "tb.sock")}}
	hs, ws := inProcessAPI(t, sb, nil)
	job := runningJob(t, ws, "0193e2e0-0000-7000-8000-00000000d5c1", "Open a window on the desktop", drydock.ProfileDesktop, sb.ID)

	// Events of every kind the timeline draws, as the LLM agent writes them.
	var pngBuf bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 40, 24))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	png.Encode(&pngBuf, img)
	// The agent saves a screenshot in the workspace and names it in the
	// observation; the timeline fetches it through the files route.
	if err := os.MkdirAll(filepath.Join(workspace, ".drydock", "shots"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(workspace, ".drydock", "shots", "c2.png"), pngBuf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		typ  drydock.EventType
		data any
	}{
		{drydock.EventModel, map[string]any{"text": "I will open a window and look at it."}},
		{drydock.EventToolCall, map[string]any{"id": "c1", "name": "bash", "input": map[string]any{"command": "xmessage hello &"}}},
		{drydock.EventObservation, map[string]any{"id": "c1", "name": "bash", "output": "started"}},
		{drydock.EventToolCall, map[string]any{"id": "c2", "name": "computer", "input": map[string]any{"action": "screenshot"}}},
		{drydock.EventObservation, drydock.ObservationEvent{ID: "c2", Name: "computer", Images: []drydock.ImageRef{
			{Path: ".drydock/shots/c2.png", MediaType: "image/png", Width: 40, Height: 24}}}},
		{drydock.EventError, map[string]any{"message": "the model's reply was cut short"}},
		{drydock.EventCondensation, map[string]any{"summary": "Steps 1 to 40 set up the project."}},
	} {
		if err := ws.AppendEvent(t.Context(), drydock.NewEvent(job.ID, e.typ, e.data)); err != nil {
			t.Fatal(err)
		}
	}

	within(t, ctx, 15*time.Second, chromedp.Navigate(hs.URL+"/jobs/"+job.ID))
	waitJS(t, ctx, 15*time.Second, `document.querySelector("#timeline .event-condensation")`)
	// The screenshot's size is known once the browser has decoded it.
	waitJS(t, ctx, 15*time.Second, `document.querySelector("#timeline .event-observation img.shot")?.naturalWidth > 0`)
	tl := eval[map[string]any](t, ctx, `(() => {
		const q = (s) => document.querySelector("#timeline " + s);
		const img = q(".event-observation img.shot");
		return {
			model: q(".event-model")?.innerText ?? "",
			bash: q(".event-tool_call pre.cmd")?.innerText ?? "",
			image: img ? img.naturalWidth + "x" + img.naturalHeight : "",
			error: q(".event-error")?.innerText ?? "",
			memory: q(".event-condensation")?.innerText ?? "",
		};
	})()`)
	for k, want := range map[string]string{"model": "I will open a window", "bash": "$ xmessage hello &", "image": "40x24",
		"error": "cut short", "memory": "summarized"} {
		if got, _ := tl[k].(string); !strings.Contains(got, want) {
			t.Errorf("timeline %s: %q, want %q", k, got, want)
		}
	}
	waitJS(t, ctx, 30*time.Second, `document.querySelector("#desktop-screen canvas") && document.querySelector(".desktop .pill")?.textContent == "connected"`)
	// The canvas shows the screen: many colours, once the first update is in.
	waitJS(t, ctx, 30*time.Second, `(() => {
		const c = document.querySelector("#desktop-screen canvas");
		if (!c || c.width != 1024 || c.height != 640) return false;
		const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		const seen = new Set();
		for (let i = 0; i < d.length; i += 4 * 31) seen.add(d[i] << 16 | d[i + 1] << 8 | d[i + 2]);
		return seen.size > 3;
	})()`)
	shot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("#desktop-screen")))
	if err != nil {
		t.Fatal(err)
	}
	if n := colours(t, shot); n < 4 {
		t.Errorf("the desktop as the page shows it has %d colours", n)
	}
	saveScreenshot(t, ctx, "ui-desktop.png")

	// Clicking the canvas at a screen point: where does the real cursor go?
	clickAt := func(x, y int) {
		t.Helper()
		pt := eval[[]float64](t, ctx, fmt.Sprintf(`(() => {
			const c = document.querySelector("#desktop-screen canvas"), r = c.getBoundingClientRect();
			return [r.left + %d * r.width / c.width, r.top + %d * r.height / c.height];
		})()`, x, y))
		within(t, ctx, 5*time.Second, chromedp.MouseClickXY(pt[0], pt[1]))
	}
	// Not wctx, which bounded the start: by now, on a loaded machine, the
	// page's steps may have outlasted it.
	cursor := func() desktop.Point {
		cctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		res, err := d.Do(cctx, desktop.Action{Action: desktop.ActionCursorPosition})
		if err != nil {
			t.Fatal(err)
		}
		return *res.Cursor
	}
	near := func(p desktop.Point, x, y int) bool { return abs(p.X-x) <= 3 && abs(p.Y-y) <= 3 }
	clickAt(200, 150)
	// Nothing to wait for when nothing may happen: give a click that wrongly
	// got through the time it would take, then look.
	time.Sleep(500 * time.Millisecond)
	if p := cursor(); near(p, 200, 150) {
		t.Errorf("a view-only click moved the desktop's cursor to %v", p)
	}
	within(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(`.desktop button[aria-pressed]`)))
	// Connected, and the view-only connection's canvas gone: clickAt
	// measures the first canvas.
	waitJS(t, ctx, 20*time.Second, `document.querySelector(".desktop button[aria-pressed]").getAttribute("aria-pressed") == "true" && document.querySelector(".desktop .pill")?.textContent == "connected"
		&& document.querySelectorAll("#desktop-screen canvas").length == 1 && document.querySelector("#desktop-screen canvas").width == 1024`)
	time.Sleep(500 * time.Millisecond)
	clickAt(300, 250)
	// The click crosses the browser, the proxy, toolboxd and x11vnc.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		p := cursor()
		if near(p, 300, 250) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("with control, a click at 300,250 left the cursor at %v", p)
		}
	}

	// The job ends: the desktop closes in the page.
	if err := ws.FinishJob(t.Context(), job.ID, "e2e", drydock.JobResult{Status: drydock.StatusComplete}); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 20*time.Second, `document.querySelector(".desktop .pill")?.textContent.startsWith("ended")`)
}

type nopQueue struct{}

func (nopQueue) Notify()       {}
func (nopQueue) Cancel(string) {}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
