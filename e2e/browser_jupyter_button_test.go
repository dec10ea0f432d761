package e2e_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drydockhq/drydock"
)

// "Open Jupyter" shows as soon as a job runs, before its sandbox exists: a
// click then waits for the sandbox, saying so, and sends the tab it opened
// to the job's Jupyter link once there is one, instead of failing and
// leaving the person to click again. The page's window.open is replaced by
// a recorder: the tab itself is the browser's business.
func TestBrowserOpenJupyterBeforeTheSandbox(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	sb := &drydock.Sandbox{ID: "sb-e2e-jupyter-button", State: drydock.SandboxRunning, Token: "tb-token",
		Endpoint: drydock.Endpoint{Network: "unix", Address: "/nonexistent/tb.sock"}}
	hs, ws := inProcessAPI(t, sb, nil)
	job := runningJob(t, ws, "0193e2e0-0000-7000-8000-0000000091ab", "Use Jupyter", drydock.ProfileHeadless, "")

	within(t, ctx, 15*time.Second, chromedp.Navigate(hs.URL+"/jobs/"+job.ID))
	waitJS(t, ctx, 15*time.Second, `!!document.querySelector("#open-jupyter")`)
	eval[bool](t, ctx, `window.open = () => (window.tab = {closed: false, location: "", close() { this.closed = true; }}); true`)
	eval[bool](t, ctx, `document.querySelector("#open-jupyter").click(); true`)
	waitJS(t, ctx, 15*time.Second, `document.body.innerText.includes("waiting for the job's sandbox")`)
	time.Sleep(2500 * time.Millisecond) // at least one more try while there is no sandbox
	if closed := eval[bool](t, ctx, `window.tab.closed || String(window.tab.location) !== ""`); closed {
		t.Fatal("the tab was closed or sent somewhere before the job had a sandbox")
	}

	if err := ws.UpdateProgress(t.Context(), job.ID, "e2e", drydock.JobProgress{Steps: 1, SandboxID: &sb.ID}); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 15*time.Second, `String(window.tab.location).includes("/jobs/`+job.ID+`/jupyter/")`)
	if eval[bool](t, ctx, `window.tab.closed || document.body.innerText.includes("waiting for the job's sandbox")`) {
		t.Error("the tab was closed, or the page still says it waits, after the link was given")
	}
}
