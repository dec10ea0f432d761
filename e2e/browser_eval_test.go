package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The web UI's page of an eval run lists the run's jobs from the server's
// records (their eval_* metadata): each attempt with its job and check
// job linked and its result, the pass rate on top; metadata anyone could
// have set is shown as text.
func TestBrowserShowsAnEvalRun(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	s := newServer(t)
	s.start()
	suite := filepath.Join(t.TempDir(), "smoke.json")
	os.WriteFile(suite, []byte(`{"name": "smoke", "tasks": [
		{"id": "notes", "task": "write notes [fake:steps=1]", "check": "test -d notes"},
		{"id": "wrong", "task": "write notes [fake:steps=1]", "check": "echo no such file; exit 4"}]}`), 0o644)
	cmd := exec.Command(binary, "eval", suite, "--run-id", "ui-run", "--json")
	cmd.Env = append(os.Environ(), "DRYDOCK_URL="+s.url(), "DRYDOCK_TOKEN=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("drydock eval: %v %s", err, out)
	}
	var rep struct {
		Tasks []struct {
			ID       string
			Attempts []struct {
				JobID string `json:"job_id"`
				Check struct {
					JobID string `json:"job_id"`
				}
			}
		}
	}
	if err := json.Unmarshal(out, &rep); err != nil || len(rep.Tasks) != 2 {
		t.Fatalf("report: %v %s", err, out)
	}
	// A job of the run that someone scheduled with markup in its metadata.
	s.schedule(`{"task": "x [fake:steps=1]", "metadata": {"eval_run": "ui-run", "eval_task": "<img src=x onerror=\"document.title='pwned'\">"}}`)

	within(t, ctx, 15*time.Second, chromedp.Navigate(s.url()+"/evals/ui-run"))
	waitJS(t, ctx, 30*time.Second, `document.querySelectorAll("tbody tr").length === 3 && !document.querySelector("td.eval-running")`)
	for i, want := range []string{"passed", "failed"} {
		row := `document.querySelector('tr[data-id="` + rep.Tasks[i].Attempts[0].JobID + `"]')`
		if got := eval[string](t, ctx, row+`.dataset.result + " " + `+row+`.textContent`); !strings.HasPrefix(got, want+" ") || !strings.Contains(got, rep.Tasks[i].ID) {
			t.Errorf("row of %s: %q; want %s", rep.Tasks[i].ID, got, want)
		}
		hrefs := eval[[]string](t, ctx, `[...`+row+`.querySelectorAll("a")].map(a => a.getAttribute("href"))`)
		if len(hrefs) != 2 || hrefs[0] != "/jobs/"+rep.Tasks[i].Attempts[0].JobID || hrefs[1] != "/jobs/"+rep.Tasks[i].Attempts[0].Check.JobID {
			t.Errorf("links of %s: %v; want its job and its check job", rep.Tasks[i].ID, hrefs)
		}
	}
	// The failed check says why, with the tail of its output (as text).
	waitJS(t, ctx, 20*time.Second, `document.querySelector('tr[data-id="`+rep.Tasks[1].Attempts[0].JobID+`"] td.eval-failed pre') !== null`)
	if got := eval[string](t, ctx, `document.querySelector('tr[data-id="`+rep.Tasks[1].Attempts[0].JobID+`"] td.eval-failed').textContent`); got != "check failed (exit 4)no such file" {
		t.Errorf("the failed attempt says %q", got)
	}
	if got := eval[string](t, ctx, `document.querySelector(".eval-summary").textContent`); !strings.Contains(got, "Suite smoke: 1 of 3 attempts passed over 3 tasks") {
		t.Errorf("summary %q", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("main img").length`); n != 0 || eval[string](t, ctx, `document.title`) == "pwned" {
		t.Error("metadata's markup became part of the page")
	}
	checkAccessible(t, ctx, "eval run page")
	saveScreenshot(t, ctx, "eval-run.png")

	// The jobs list links each job of a run to the run's page.
	within(t, ctx, 15*time.Second, chromedp.Navigate(s.url()+"/"))
	row := `document.querySelector('tr[data-id="` + rep.Tasks[0].Attempts[0].JobID + `"] a.eval-link')`
	waitJS(t, ctx, 20*time.Second, row+` !== null`)
	if got := eval[string](t, ctx, row+`.getAttribute("href")`); got != "/evals/ui-run" {
		t.Errorf("the list links the job to %q; want /evals/ui-run", got)
	}
	within(t, ctx, 10*time.Second, chromedp.Click(`tr[data-id="`+rep.Tasks[0].Attempts[0].JobID+`"] a.eval-link`))
	waitJS(t, ctx, 20*time.Second, `location.pathname === "/evals/ui-run" && document.querySelectorAll("tbody tr").length === 3`)
}
