package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/drydockhq/drydock"
)

// The job page shows a chain of follow-ups as one thread: the jobs it
// continues (each timeline folded and opened on demand), itself, and the
// jobs that continue it, all linked; messages are shown as text.
func TestBrowserShowsTheThreadOfFollowUps(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	s := newServer(t)
	s.start()
	root := s.schedule(`{"task": "Write the first notes [fake:steps=1]"}`)
	if j, _ := s.waitTerminal(root, time.Minute); j.Status != drydock.StatusComplete {
		t.Fatalf("root: %s %q", j.Status, j.Error)
	}
	followUp := func(parent, text string) string {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"text": text})
		code, data := s.do("POST", "/v1/jobs/"+parent+"/messages", "", string(body))
		if code != 201 {
			t.Fatalf("follow-up of %s: %d %s", parent, code, data)
		}
		var j drydock.Job
		json.Unmarshal(data, &j)
		if got, _ := s.waitTerminal(j.ID, time.Minute); got.Status != drydock.StatusComplete {
			t.Fatalf("follow-up: %s %q", got.Status, got.Error)
		}
		return j.ID
	}
	mid := followUp(root, `Now more notes <img src=x onerror="document.title='pwned'"> [fake:steps=1]`)
	last := followUp(mid, "And the last ones [fake:steps=1]")

	within(t, ctx, 15*time.Second, chromedp.Navigate(s.url()+"/jobs/"+mid))
	waitJS(t, ctx, 20*time.Second, `document.querySelectorAll("#thread-list .thread-item").length === 3`)
	roles := eval[[]string](t, ctx, `[...document.querySelectorAll("#thread-list .thread-item")].map(li => li.dataset.role + " " + li.dataset.jobId)`)
	want := []string{"ancestor " + root, "current " + mid, "follow-up " + last}
	for i := range want {
		if i >= len(roles) || roles[i] != want[i] {
			t.Fatalf("thread = %v; want %v", roles, want)
		}
	}
	if got := eval[string](t, ctx, `document.getElementById("parent-link").getAttribute("href")`); got != "/jobs/"+root {
		t.Errorf("the parent link goes to %q", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#thread img, h1 img").length`); n != 0 || eval[string](t, ctx, `document.title`) == "pwned" {
		t.Error("a message's markup became part of the page")
	}
	// The ancestor's timeline, opened in place.
	within(t, ctx, 5*time.Second, chromedp.Click(`#thread-list .thread-ancestor details summary`))
	waitJS(t, ctx, 15*time.Second, `document.querySelectorAll("#thread-list .thread-ancestor .timeline .event").length > 2`)
	checkAccessible(t, ctx, "job page with a thread")
	saveScreenshot(t, ctx, "job-thread.png")

	// The root lists its follow-up; a job outside any thread shows none.
	within(t, ctx, 10*time.Second, chromedp.Click(`#parent-link`))
	waitJS(t, ctx, 20*time.Second, `location.pathname === "/jobs/`+root+`" && document.querySelectorAll("#thread-list .thread-follow-up").length === 1`)
	if got := eval[string](t, ctx, `document.querySelector("#thread-list .thread-follow-up").dataset.jobId`); got != mid {
		t.Errorf("the root's follow-up is %q; want %s", got, mid)
	}
	// The list marks follow-ups.
	within(t, ctx, 15*time.Second, chromedp.Navigate(s.url()+"/"))
	waitJS(t, ctx, 20*time.Second, `document.querySelector('tr[data-id="`+mid+`"]') !== null`)
	if got := eval[string](t, ctx, `document.querySelector('tr[data-id="`+mid+`"] .task-cell').textContent`); !strings.Contains(got, "follow-up") {
		t.Errorf("the list does not mark the follow-up: %q", got)
	}
	if got := eval[string](t, ctx, `document.querySelector('tr[data-id="`+root+`"] .task-cell').textContent`); strings.Contains(got, "follow-up") {
		t.Errorf("the list marks a job that started afresh: %q", got)
	}
	// On a finished job the message box asks for a follow-up, which opens
	// the new job's page, in the thread after the job it continues.
	within(t, ctx, 15*time.Second, chromedp.Navigate(s.url()+"/jobs/"+last))
	waitJS(t, ctx, 20*time.Second, `document.getElementById("message-form")?.dataset.mode === "follow-up" && !document.getElementById("message-form").hidden`)
	if got := eval[string](t, ctx, `document.getElementById("message-send").textContent`); got != "Start follow-up" {
		t.Errorf("the finished job's box says %q", got)
	}
	within(t, ctx, 10*time.Second,
		chromedp.SendKeys("#message-text", "One more from the box [fake:steps=1]"),
		chromedp.Click("#message-send"))
	waitJS(t, ctx, 20*time.Second, `location.pathname !== "/jobs/`+last+`" && document.getElementById("parent-link")?.getAttribute("href") === "/jobs/`+last+`"`)
	fromBox := strings.TrimPrefix(eval[string](t, ctx, `location.pathname`), "/jobs/")
	if j := s.status(fromBox); j.ParentJobID != last || j.Task != "One more from the box [fake:steps=1]" {
		t.Errorf("the box's follow-up %s: parent %q, task %q", fromBox, j.ParentJobID, j.Task)
	}

	lone := s.schedule(`{"task": "alone [fake:steps=1]"}`)
	within(t, ctx, 15*time.Second, chromedp.Navigate(s.url()+"/jobs/"+lone))
	waitJS(t, ctx, 20*time.Second, `document.getElementById("steps") !== null`)
	if !eval[bool](t, ctx, `document.getElementById("thread").hidden`) {
		t.Error("a job outside any thread shows a thread")
	}
}
