package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/drydockhq/drydock"
)

// The job page's message box: the question an interactive
// job's agent waits on is shown at the top with the box focused; a message
// typed into the box is sent as JSON, stored, and shows in the timeline as
// a message; a refused one says why. The question's and the message's
// markup stay text.
func TestBrowserMessageBox(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	hs, ws := inProcessAPI(t, &drydock.Sandbox{ID: "sb-none"}, nil)
	job := runningJob(t, ws, "0193e2e0-0000-7000-8000-0000000005e9", "Build the store", drydock.ProfileHeadless, "")
	const question = `Postgres <img src=x onerror="document.title='pwned'"> or SQLite?`
	if err := ws.SetWaitingFor(t.Context(), job.ID, "e2e", question); err != nil {
		t.Fatal(err)
	}

	within(t, ctx, 20*time.Second, chromedp.Navigate(hs.URL+"/jobs/"+job.ID))
	waitJS(t, ctx, 20*time.Second, `document.querySelector("#waiting-for")?.hidden === false`)
	if got := eval[string](t, ctx, `document.querySelector("#waiting-question").textContent`); got != question {
		t.Errorf("the question shows as %q", got)
	}
	if id := eval[string](t, ctx, `document.activeElement?.id ?? ""`); id != "message-text" {
		t.Errorf("focus is on %q; want the message box", id)
	}
	checkAccessible(t, ctx, "job page with a question")
	saveScreenshot(t, ctx, "job-waiting-for.png")

	const answer = `Postgres, <b>please</b>`
	within(t, ctx, 10*time.Second,
		chromedp.SendKeys("#message-text", answer),
		chromedp.Click("#message-send"))
	waitJS(t, ctx, 15*time.Second, `[...document.querySelectorAll('#timeline li[data-type="user_message"]')].some(li => li.textContent.includes("Postgres, <b>please</b>"))`)
	waitJS(t, ctx, 5*time.Second, `document.querySelector("#message-status").textContent.startsWith("Sent")`)
	if v := eval[string](t, ctx, `document.querySelector("#message-text").value`); v != "" {
		t.Errorf("the box still holds %q after sending", v)
	}
	events, err := ws.ListEvents(t.Context(), job.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	for _, e := range events {
		if e.Type == drydock.EventUserMessage {
			var m drydock.UserMessage
			if err := json.Unmarshal(e.Data, &m); err != nil {
				t.Fatal(err)
			}
			stored = append(stored, m.Text)
		}
	}
	if len(stored) != 1 || stored[0] != answer {
		t.Errorf("stored messages %q; want the one typed", stored)
	}

	// A text the server refuses (a NUL byte) is not stored, and the page
	// says why.
	eval[any](t, ctx, `(() => { const el = document.querySelector("#message-text"); el.value = "a\u0000b"; document.querySelector("#message-form").requestSubmit(); return null; })()`)
	waitJS(t, ctx, 10*time.Second, `document.querySelector("#message-status").textContent.startsWith("Not sent")`)
	if msg := eval[string](t, ctx, `document.querySelector("#message-status").textContent`); !strings.Contains(msg, "NUL") {
		t.Errorf("the refusal says %q; want the server's reason", msg)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#waiting-for img, #timeline img, #timeline b").length`); n != 0 {
		t.Errorf("markup of the question or a message became %d elements", n)
	}
	if title := eval[string](t, ctx, `document.title`); title == "pwned" {
		t.Error("the question ran as script")
	}

	// Answered: the agent clears the question and the banner goes away.
	if err := ws.SetWaitingFor(t.Context(), job.ID, "e2e", ""); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 10*time.Second, `document.querySelector("#waiting-for")?.hidden === true`)
}
