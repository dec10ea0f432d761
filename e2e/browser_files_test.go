package e2e_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/drydockhq/drydock"
	tbserver "github.com/drydockhq/drydock/toolbox/server"
)

// A job page opened as the job starts, before its sandbox exists and then
// before the daemon in the sandbox listens, shows the workspace once the
// sandbox answers, without a click on Refresh: the UI sends people to a
// job's page as soon as it is scheduled.
func TestBrowserFilesOfAStartingSandbox(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	sockDir, err := os.MkdirTemp("", "ddfiles")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	var asked atomic.Int64 // lookups of the sandbox, one per live listing
	sb := &drydock.Sandbox{ID: "sb-e2e-files", State: drydock.SandboxRunning, Token: "tb-token",
		Endpoint: drydock.Endpoint{Network: "unix", Address: filepath.Join(sockDir, "tb.sock")}}
	hs, ws := inProcessAPI(t, sb, &asked)
	job := runningJob(t, ws, "0193e2e0-0000-7000-8000-00000000f11e", "Write a file", drydock.ProfileHeadless, "")

	// Running, no sandbox yet.
	within(t, ctx, 15*time.Second, chromedp.Navigate(hs.URL+"/jobs/"+job.ID))
	waitJS(t, ctx, 15*time.Second, `document.querySelector(".files .tree")?.innerText.includes("still creating its sandbox")`)

	// The sandbox exists; its daemon does not listen yet.
	if err := ws.UpdateProgress(t.Context(), job.ID, "e2e", drydock.JobProgress{Steps: 1, SandboxID: &sb.ID}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); asked.Load() < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			body := eval[string](t, ctx, `document.querySelector(".files")?.innerText ?? ""`)
			t.Fatalf("the page asked for the sandbox's files %d times in 30s; it shows:\n%s", asked.Load(), body)
		}
	}
	if text := eval[string](t, ctx, `document.querySelector(".files .tree").innerText`); text == "" {
		t.Error("the tree is empty while the sandbox does not answer")
	}

	// The daemon listens.
	workspace := t.TempDir()
	if err := os.WriteFile(filepath.Join(workspace, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	serveToolboxd(t, sb.Endpoint.Address, tbserver.Config{Workspace: workspace, Token: sb.Token, StateDir: filepath.Join(sockDir, "state"),
		Profile: drydock.ProfileHeadless})
	waitJS(t, ctx, 15*time.Second, `document.querySelector('.files button.tree-file[data-path="hello.txt"]')`)
	if src := eval[string](t, ctx, `document.querySelector(".files .section-head [role=status]").textContent`); src != "live from the sandbox" {
		t.Errorf("the tree's source: %q", src)
	}
}
