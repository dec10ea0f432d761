package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drydockhq/drydock/gittest"
)

// The job page names the repository a job started from and the commit it
// pushed, as text (the names come from the job's owner and the remote).
func TestBrowserShowsARepositoryJob(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	git := gittest.New(t, gittest.Options{})
	s := newServer(t)
	s.start()
	id := s.schedule(`{"task": "notes [fake:steps=1] [fake:delay=10ms]", "repo": {"url": "` + git.URL + `", "ref": "feature/x", "push": {"branch": "drydock/ui"}}}`)
	j, _ := s.waitTerminal(id, time.Minute)
	if j.Status != "complete" || len(j.PushedCommit) != 40 {
		t.Fatalf("job: %s %q pushed %q\n%s", j.Status, j.Error, j.PushedCommit, s.logs)
	}
	within(t, ctx, 20*time.Second,
		chromedp.Navigate(s.url()+"/jobs/"+id),
		chromedp.WaitVisible(chromedp.CSS("#pushed")))
	if got := eval[string](t, ctx, `document.getElementById("repo").textContent`); got != git.URL+"@feature/x" {
		t.Errorf("repository shown: %q", got)
	}
	if got := eval[string](t, ctx, `document.getElementById("pushed").textContent`); got != "drydock/ui @ "+j.PushedCommit[:12] {
		t.Errorf("push shown: %q", got)
	}
	if !strings.Contains(eval[string](t, ctx, `document.getElementById("timeline").innerText`), "The workspace holds a clone of "+git.URL) {
		t.Errorf("the timeline does not show the clone")
	}
}
