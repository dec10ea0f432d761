package e2e_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
	artifactlocal "github.com/drydockhq/drydock/artifact/local"
	"github.com/drydockhq/drydock/store/sqlite"
	tbserver "github.com/drydockhq/drydock/toolbox/server"
	"github.com/drydockhq/drydock/watch"
	"github.com/prometheus/client_golang/prometheus"
)

// inProcessAPI serves the API and the UI from this process in development
// mode, with the sandboxes sandboxes finds, and returns the server and its
// store, in which the test plays the worker.
func inProcessAPI(t *testing.T, sandboxes func(context.Context, string) (*drydock.Sandbox, error)) (*httptest.Server, *watch.Store) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	arts, err := artifactlocal.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := watch.Wrap(st)
	srv := api.New(api.Config{DevMode: true, SSEPoll: 100 * time.Millisecond, Sandboxes: sandboxes},
		ws, nopQueue{}, arts, prometheus.NewRegistry(), nil)
	hs := httptest.NewServer(srv)
	// The browser, which outlives this cleanup, holds event streams open;
	// Shutdown ends them, as drydock server does when it stops.
	t.Cleanup(func() { srv.Shutdown(); hs.Close() })
	return hs, ws
}

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
	hs, ws := inProcessAPI(t, func(ctx context.Context, id string) (*drydock.Sandbox, error) {
		if id != sb.ID {
			return nil, drydock.Errorf(drydock.ENOTFOUND, "no sandbox %s", id)
		}
		asked.Add(1)
		return sb, nil
	})
	job := &drydock.Job{ID: "0193e2e0-0000-7000-8000-00000000f11e", Status: drydock.StatusPending, CreatedAt: time.Now().UTC(),
		OwnerID: api.LocalPrincipal.ID, JobSpec: drydock.JobSpec{Task: "Write a file", Profile: drydock.ProfileHeadless}}
	if err := ws.CreateJob(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.ClaimJob(t.Context(), "e2e", time.Minute); err != nil {
		t.Fatal(err)
	}

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
	tb := tbserver.New(tbserver.Config{Workspace: workspace, Token: sb.Token, StateDir: filepath.Join(sockDir, "state"),
		Profile: drydock.ProfileHeadless}, nil)
	ln, err := net.Listen("unix", sb.Endpoint.Address)
	if err != nil {
		t.Fatal(err)
	}
	ths := &http.Server{Handler: tb}
	go ths.Serve(ln)
	t.Cleanup(func() { ths.Close(); tb.Close() })
	waitJS(t, ctx, 15*time.Second, `document.querySelector('.files button.tree-file[data-path="hello.txt"]')`)
	if src := eval[string](t, ctx, `document.querySelector(".files .section-head [role=status]").textContent`); src != "live from the sandbox" {
		t.Errorf("the tree's source: %q", src)
	}
}
