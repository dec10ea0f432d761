package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/docker"
	"github.com/drydockhq/drydock/runtime/runtimetest"
	"github.com/drydockhq/drydock/toolbox"
)

// Jupyter in a real sandbox, through toolboxd's routes only: started on
// request under a base URL, its API, its UI page and a kernel's WebSocket
// reached through /v1/jupyter/proxy/.
func TestJupyterInRealSandbox(t *testing.T) {
	t.Parallel()
	for _, e := range engines() {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			host := os.Getenv(e.env)
			if host == "" {
				t.Skipf("%s not set: no %s engine (make test starts one)", e.env, e.name)
			}
			img := os.Getenv("DRYDOCK_TEST_IMAGE_HEADLESS")
			if img == "" {
				img = "drydock-sandbox:headless"
			}
			rt, err := docker.New(docker.Options{Host: host, ServerID: "e2e-jupyter-" + e.name, StateDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			ctx := ctxT(t, 4*time.Minute)
			jobID := "0193dddd-0000-7000-8000-" + map[string]string{"docker": "00000000jup1", "podman": "00000000jup2"}[e.name]
			sb, err := rt.Create(ctx, drydock.SandboxSpec{JobID: jobID, Image: img, Profile: drydock.ProfileHeadless,
				Labels: map[string]string{drydock.LabelJob: jobID}})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Destroy(context.WithoutCancel(ctx), sb.ID)
			c := toolbox.New(sb.Endpoint, sb.Token)
			defer c.Close()
			if err := c.WaitReady(ctx); err != nil {
				t.Fatal(err)
			}
			info, err := c.Info(ctx)
			if err != nil || info.APIVersion < 2 {
				t.Fatalf("toolboxd in %s speaks API %+v (%v); rebuild the image", img, info, err)
			}
			if err := c.WriteFile(ctx, "hello.py", []byte("print('hi')\n")); err != nil {
				t.Fatal(err)
			}

			hc := &http.Client{Transport: c.Transport(), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			call := func(method, path, body string) (int, http.Header, []byte) {
				t.Helper()
				req, _ := http.NewRequestWithContext(ctx, method, c.BaseURL()+path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+sb.Token)
				resp, err := hc.Do(req)
				if err != nil {
					t.Fatalf("%s %s: %v", method, path, err)
				}
				defer resp.Body.Close()
				data, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, resp.Header, data
			}
			base := "/jobs/" + jobID + "/jupyter/"
			t0 := time.Now()
			code, _, data := call("POST", "/v1/jupyter/start", `{"base_url": "`+base+`"}`)
			if code != 200 {
				t.Fatalf("start: %d %s", code, data)
			}
			t.Logf("%s: Jupyter answered %v after the start request", e.name, time.Since(t0).Round(time.Millisecond))
			t0 = time.Now()
			if code, _, data = call("POST", "/v1/jupyter/start", `{"base_url": "`+base+`"}`); code != 200 {
				t.Errorf("second start: %d %s", code, data)
			}
			t.Logf("%s: a second start answered in %v", e.name, time.Since(t0).Round(time.Millisecond))
			rd, err := c.Ready(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !componentReady(rd, "jupyter_server") {
				t.Errorf("readiness: %+v", rd.Components)
			}

			proxy := "/v1/jupyter/proxy" + base
			// The API: the workspace, and no kernels yet.
			code, _, data = call("GET", proxy+"api/contents", "")
			if code != 200 || !strings.Contains(string(data), `"hello.py"`) {
				t.Errorf("contents: %d %s", code, data)
			}
			if code, _, data = call("GET", proxy+"api/kernels", ""); code != 200 || strings.TrimSpace(string(data)) != "[]" {
				t.Errorf("kernels: %d %s", code, data)
			}
			// The UI: the base URL leads to the classic notebook's file tree.
			code, hdr, _ := call("GET", proxy, "")
			if loc := hdr.Get("Location"); code != 302 || !strings.HasPrefix(loc, base+"tree") {
				t.Errorf("base URL: %d to %q, want the tree", code, loc)
			}
			code, _, data = call("GET", proxy+"tree", "")
			if code != 200 || !strings.Contains(string(data), "notebook_list") || !strings.Contains(string(data), base+"static/") {
				t.Errorf("tree page: %d %.300s", code, data)
			}
			// Without the sandbox's token, nothing.
			req, _ := http.NewRequestWithContext(ctx, "GET", c.BaseURL()+proxy+"api/kernels", nil)
			if resp, err := hc.Do(req); err != nil || resp.StatusCode != 401 {
				t.Errorf("without the token: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}

			// A kernel, and code run in it over its WebSocket.
			var kern struct{ ID string }
			code, _, data = call("POST", proxy+"api/kernels", `{"name": "python3"}`)
			if code != 201 || json.Unmarshal(data, &kern) != nil || kern.ID == "" {
				t.Fatalf("start kernel: %d %s", code, data)
			}
			conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(c.BaseURL(), "http")+proxy+"api/kernels/"+kern.ID+"/channels", &websocket.DialOptions{
				HTTPClient: &http.Client{Transport: c.Transport()},
				HTTPHeader: http.Header{"Authorization": {"Bearer " + sb.Token}},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.CloseNow()
			t0 = time.Now()
			got, err := runtimetest.JupyterExecute(ctx, conn, "import os; 6 * 7, os.getcwd()")
			if err != nil {
				t.Fatal(err)
			}
			if got != "(42, '/workspace')" {
				t.Errorf("execute_result %q", got)
			}
			t.Logf("%s: first execution over the kernel WebSocket took %v", e.name, time.Since(t0).Round(time.Millisecond))
			conn.Close(websocket.StatusNormalClosure, "")
		})
	}
}

// waitAcrossLoads waits until the expression is true while the page may
// reload itself (the "starting" page does), which ends a single poll.
func waitAcrossLoads(t *testing.T, ctx context.Context, d time.Duration, js string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := chromedp.Run(ectx, chromedp.Evaluate[bool](js))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			body, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText.slice(0, 3000)"))
			t.Fatalf("waiting for %s: %v\npage text:\n%s", js, err, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func componentReady(r *toolbox.Readiness, name string) bool {
	for _, c := range r.Components {
		if c.Name == name {
			return c.Ready
		}
	}
	return false
}

// The whole live path a person takes: the job's Jupyter link from the API,
// opened in chromium through drydock server, the orchestrator's proxy,
// toolboxd's proxy and a real sandbox's Jupyter; the file tree shows the
// workspace and a notebook runs a cell over the kernel's WebSocket.
func TestBrowserJupyter(t *testing.T) {
	t.Parallel()
	host := os.Getenv("DRYDOCK_TEST_DOCKER_HOST")
	if host == "" {
		t.Skip("DRYDOCK_TEST_DOCKER_HOST not set: no engine to run a sandbox on (make test starts one)")
	}
	img := os.Getenv("DRYDOCK_TEST_IMAGE_HEADLESS")
	if img == "" {
		img = "drydock-sandbox:headless"
	}
	ctx := newBrowser(t)
	node := "e2e-browser-jupyter"
	s := newServer(t, "--node-id", node)
	t.Cleanup(func() { destroyByServer(t, host, node) })
	alice := createToken(t, s.dataDir, "alice")
	bob := createToken(t, s.dataDir, "bob")
	for i, a := range s.args {
		if a == "local" && s.args[i-1] == "--runtime" {
			s.args[i] = "docker"
		}
	}
	s.args = append(s.args, "--docker-host", host, "--image-headless", img)
	s.start()
	code, body := s.do("POST", "/v1/jobs", alice, `{"task": "notes, then wait [fake:steps=1] [fake:hang]"}`)
	if code != 201 {
		t.Fatalf("schedule: %d %s", code, body)
	}
	var job drydock.Job
	json.Unmarshal(body, &job)
	t.Cleanup(func() { s.do("POST", "/v1/jobs/"+job.ID+"/cancel", alice, "") })
	link := jupyterLink(t, s, job.ID, alice)
	base := "/jobs/" + job.ID + "/jupyter/"
	// Neither an anonymous visitor nor another user gets in.
	if code, _ := s.do("GET", base+"api/kernels", "", ""); code != 401 {
		t.Errorf("anonymous: %d", code)
	}
	if code, _ := s.do("GET", base+"api/kernels", bob, ""); code != 404 {
		t.Errorf("another user: %d", code)
	}

	// The link in the browser: a "starting" page that reloads itself, then
	// the classic notebook's tree with the agent's notes.
	t0 := time.Now()
	within(t, ctx, 20*time.Second, chromedp.Navigate(link))
	waitAcrossLoads(t, ctx, 3*time.Minute, `!!document.querySelector("#notebook_list") && [...document.querySelectorAll("#notebook_list .item_link")].some(a => a.textContent.trim() === "notes")`)
	t.Logf("the tree showed the workspace %v after opening the link", time.Since(t0).Round(time.Millisecond))
	if u := eval[string](t, ctx, "location.href"); strings.Contains(u, "t=") || !strings.Contains(u, base+"tree") {
		t.Errorf("the tree's URL %q keeps the link or is not the tree", u)
	}

	// A notebook made through the API (with the cookie the link left, as
	// Jupyter's own pages do), then run in the page.
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	resp, err := hc.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	nb := `{"type": "notebook", "content": {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
		"cells": [{"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": null, "outputs": [], "source": "import os\nprint('answer', 6 * 7, 'in', os.getcwd())"}]}}`
	req, _ := http.NewRequest("PUT", s.url()+base+"api/contents/check.ipynb", strings.NewReader(nb))
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 && resp.StatusCode != 200 {
		u, _ := url.Parse(s.url())
		t.Fatalf("create notebook: %d %s (cookies %v)", resp.StatusCode, data, jar.Cookies(u))
	}
	within(t, ctx, 20*time.Second, chromedp.Navigate(s.url()+base+"notebooks/check.ipynb"))
	waitJS(t, ctx, 2*time.Minute, `window.Jupyter?.notebook?.kernel?.is_connected() && Jupyter.notebook.kernel.info_reply?.status === "ok"`)
	eval[any](t, ctx, `Jupyter.notebook.execute_all_cells()`)
	waitJS(t, ctx, time.Minute, `[...document.querySelectorAll(".output_area")].some(o => o.innerText.includes("answer 42 in /workspace"))`)
	if os.Getenv("DRYDOCK_TEST_SCREENSHOTS") != "" {
		saveScreenshot(t, ctx, "ui-jupyter.png")
	}

	// The job ends: the notebook's kernel connection goes with it.
	if code, body := s.do("POST", "/v1/jobs/"+job.ID+"/cancel", alice, ""); code >= 300 {
		t.Fatalf("cancel: %d %s", code, body)
	}
	waitJS(t, ctx, time.Minute, `!Jupyter.notebook.kernel.is_connected()`)
}
