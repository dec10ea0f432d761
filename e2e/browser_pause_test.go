package e2e_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drydockhq/drydock"
)

// The job page's Pause and Resume buttons: a click pauses the job in the
// store (what every replica's agent reads), the header shows who paused it,
// the timeline shows the events, and Resume lifts it.
func TestBrowserPauseAndResume(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	hs, ws := inProcessAPI(t, &drydock.Sandbox{ID: "sb-none"}, nil)
	job := runningJob(t, ws, "0193e2e0-0000-7000-8000-0000000092ab", "Pause me", drydock.ProfileHeadless, "")

	within(t, ctx, 15*time.Second, chromedp.Navigate(hs.URL+"/jobs/"+job.ID))
	waitJS(t, ctx, 15*time.Second, `!!document.querySelector("#pause")`)
	checkAccessible(t, ctx, "job page with Pause")
	eval[bool](t, ctx, `document.querySelector("#pause").click(); true`)
	waitJS(t, ctx, 15*time.Second, `!!document.querySelector("#resume") && (document.querySelector("#paused")?.innerText ?? "").includes("by local user")`)
	if j, err := ws.GetJob(t.Context(), job.ID); err != nil || !j.Paused || j.PausedBy != "local user" {
		t.Fatalf("stored job after the click: %+v %v", j, err)
	}
	waitJS(t, ctx, 15*time.Second, `[...document.querySelectorAll(".event-paused")].some(e => e.innerText.includes("Paused by local user"))`)
	saveScreenshot(t, ctx, "job-paused")

	eval[bool](t, ctx, `document.querySelector("#resume").click(); true`)
	waitJS(t, ctx, 15*time.Second, `!!document.querySelector("#pause") && !document.querySelector("#resume")`)
	if j, _ := ws.GetJob(t.Context(), job.ID); j.Paused {
		t.Fatal("the job is still paused after Resume")
	}
	waitJS(t, ctx, 15*time.Second, `[...document.querySelectorAll(".event-resumed")].some(e => e.innerText.includes("the agent goes on"))`)

	// A finished job offers neither.
	if err := ws.FinishJob(t.Context(), job.ID, "e2e", drydock.JobResult{Status: drydock.StatusComplete}); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 15*time.Second, `!document.querySelector("#pause") && !document.querySelector("#resume") && !document.querySelector("#cancel")`)
}
