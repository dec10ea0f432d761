package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drydockhq/drydock"
	tbserver "github.com/drydockhq/drydock/toolbox/server"
)

// "Take control" on the job page takes the desktop's control lease: the
// job shows as paused with who holds control, a second tab asking for
// control is told who has it and stays view-only, and "Release control"
// resumes the job. A real Xvfb + x11vnc behind a real toolboxd, the API in
// this process.
func TestBrowserTakeControlPausesTheJob(t *testing.T) {
	t.Parallel()
	requireX11Tools(t)
	ctx := newBrowser(t)
	sockDir, err := os.MkdirTemp("", "ddctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	const password = "pw-e2e-ctl"
	d := startX11Desktop(t, filepath.Join(sockDir, "vnc.sock"), password)
	wctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := d.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	serveToolboxd(t, filepath.Join(sockDir, "tb.sock"), tbserver.Config{Workspace: t.TempDir(), Token: "tb-token", Desktop: desktopAdapter{d},
		StateDir: filepath.Join(sockDir, "state"), Profile: drydock.ProfileDesktop})
	sb := &drydock.Sandbox{ID: "sb-e2e-ctl", State: drydock.SandboxRunning, Token: "tb-token", VNCPassword: password,
		Endpoint: drydock.Endpoint{Network: "unix", Address: filepath.Join(sockDir, "tb.sock")}}
	hs, ws := inProcessAPI(t, sb, nil)
	job := runningJob(t, ws, "0193e2e0-0000-7000-8000-00000000c7a1", "Let me drive", drydock.ProfileDesktop, sb.ID)

	const connected = `document.querySelector(".desktop .pill")?.textContent == "connected"`
	const pressed = `document.querySelector(".desktop button[aria-pressed]").getAttribute("aria-pressed")`
	within(t, ctx, 15*time.Second, chromedp.Navigate(hs.URL+"/jobs/"+job.ID))
	waitJS(t, ctx, 30*time.Second, connected)
	within(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(`.desktop button[aria-pressed]`)))
	waitJS(t, ctx, 20*time.Second, pressed+` == "true" && `+connected)
	var j *drydock.Job
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if j, err = ws.GetJob(t.Context(), job.ID); err == nil && j.Paused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("taking control did not pause the job: %+v %v", j, err)
		}
	}
	if j.ControlBy != "local user" || j.PausedBy != "" {
		t.Fatalf("job with control taken: control %q, paused by %q", j.ControlBy, j.PausedBy)
	}
	waitJS(t, ctx, 15*time.Second, `(document.querySelector("#paused")?.innerText ?? "").includes("local user has control of the desktop")`)
	waitJS(t, ctx, 15*time.Second, `[...document.querySelectorAll(".event-paused")].some(e => e.innerText.includes("took control of the desktop"))`)
	saveScreenshot(t, ctx, "job-control")

	// Another tab asks for control: refused, naming the holder; it watches.
	tab, closeTab := chromedp.NewContext(ctx)
	defer closeTab()
	// The first action on a tab opens it, and a deadline on that action
	// would close it again at its end: open it without one.
	if err := chromedp.Do(tab); err != nil {
		t.Fatal(err)
	}
	within(t, tab, 15*time.Second, chromedp.Navigate(hs.URL+"/jobs/"+job.ID))
	waitJS(t, tab, 30*time.Second, connected)
	within(t, tab, 5*time.Second, chromedp.Click(chromedp.CSS(`.desktop button[aria-pressed]`)))
	waitJS(t, tab, 20*time.Second, `document.querySelector(".desktop p.muted")?.innerText.includes("Control refused: local user has control")`)
	waitJS(t, tab, 20*time.Second, pressed+` == "false" && `+connected)
	if j, _ := ws.GetJob(t.Context(), job.ID); !j.Paused || j.ControlBy != "local user" {
		t.Fatalf("the refused tab changed the control: %+v", j)
	}
	closeTab()

	within(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(`.desktop button[aria-pressed]`)))
	waitJS(t, ctx, 20*time.Second, pressed+` == "false" && `+connected)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if j, err = ws.GetJob(t.Context(), job.ID); err == nil && !j.Paused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("releasing control did not resume the job: %+v %v", j, err)
		}
	}
	waitJS(t, ctx, 15*time.Second, `[...document.querySelectorAll(".event-resumed")].some(e => e.innerText.includes("released control"))`)

	// Control ended elsewhere (as --pause-max ends it): at the next renewal
	// the server closes the connection, and the page goes back to watching
	// and says so, without taking control again by itself.
	within(t, ctx, 5*time.Second, chromedp.Click(chromedp.CSS(`.desktop button[aria-pressed]`)))
	waitJS(t, ctx, 20*time.Second, pressed+` == "true" && `+connected)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if j, err = ws.GetJob(t.Context(), job.ID); err == nil && j.ControlBy != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("taking control again did not hold the lease: %+v %v", j, err)
		}
	}
	if _, err := ws.ChangePause(t.Context(), job.ID, drydock.PauseChange{Op: drydock.OpEndPause, By: "pause-max"}); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 30*time.Second, pressed+` == "false" && (document.querySelector(".desktop p.muted")?.innerText ?? "").includes("Control ended")`)
	waitJS(t, ctx, 20*time.Second, connected)
	if j, _ := ws.GetJob(t.Context(), job.ID); j.Paused || j.ControlBy != "" {
		t.Errorf("the page took control back by itself: paused %v, control %q", j.Paused, j.ControlBy)
	}
}
