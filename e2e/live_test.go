package e2e_test

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
	artifactlocal "github.com/drydockhq/drydock/artifact/local"
	"github.com/drydockhq/drydock/desktop"
	"github.com/drydockhq/drydock/store/sqlite"
	tbserver "github.com/drydockhq/drydock/toolbox/server"
	"github.com/drydockhq/drydock/watch"
	"github.com/prometheus/client_golang/prometheus"
)

// The pieces of a live view without Docker: the API in this process, a
// toolboxd on a unix socket, and a real X11 desktop on the host.

// inProcessAPI serves the API and the UI from this process in development
// mode, with sb as the only sandbox (each lookup of it counted in asked
// when not nil), and returns the server and its store, in which the test
// plays the worker.
func inProcessAPI(t *testing.T, sb *drydock.Sandbox, asked *atomic.Int64) (*httptest.Server, *watch.Store) {
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
	sandboxes := func(ctx context.Context, id string) (*drydock.Sandbox, error) {
		if id != sb.ID {
			return nil, drydock.Errorf(drydock.ENOTFOUND, "no sandbox %s", id)
		}
		if asked != nil {
			asked.Add(1)
		}
		return sb, nil
	}
	srv := api.New(api.Config{DevMode: true, SSEPoll: 100 * time.Millisecond, Sandboxes: sandboxes},
		ws, nopQueue{}, arts, prometheus.NewRegistry(), nil)
	hs := httptest.NewServer(srv)
	// The browser, which outlives this cleanup, holds event streams open;
	// Shutdown ends them, as drydock server does when it stops.
	t.Cleanup(func() { srv.Shutdown(); hs.Close() })
	return hs, ws
}

// runningJob puts a job in ws as a worker would: claimed, and in sandbox
// sandboxID unless that is empty (a sandbox still being created).
func runningJob(t *testing.T, ws *watch.Store, id, task string, profile drydock.Profile, sandboxID string) *drydock.Job {
	t.Helper()
	job := &drydock.Job{ID: id, Status: drydock.StatusPending, CreatedAt: time.Now().UTC(),
		OwnerID: api.LocalPrincipal.ID, JobSpec: drydock.JobSpec{Task: task, Profile: profile}}
	if err := ws.CreateJob(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.ClaimJob(t.Context(), "e2e", time.Minute); err != nil {
		t.Fatal(err)
	}
	if sandboxID != "" {
		if err := ws.UpdateProgress(t.Context(), id, "e2e", drydock.JobProgress{Steps: 1, SandboxID: &sandboxID}); err != nil {
			t.Fatal(err)
		}
	}
	return job
}

// serveToolboxd serves a toolboxd made with cfg on the unix socket path
// until the test ends.
func serveToolboxd(t *testing.T, path string, cfg tbserver.Config) {
	t.Helper()
	tb := tbserver.New(cfg, nil)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: tb}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close(); tb.Close() })
}

// requireX11Tools skips unless the desktop's programs, and extra ones the
// test runs, are installed.
func requireX11Tools(t *testing.T, extra ...string) {
	t.Helper()
	for _, bin := range append([]string{"Xvfb", "x11vnc", "fluxbox", "xdotool"}, extra...) {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed (scripts/testenv/sandbox-tools.sh installs the desktop tools)", bin)
		}
	}
}

// startX11Desktop starts a 1024x640 desktop on a free display with its VNC
// server on the unix socket vncSocket; it stops when the test ends.
func startX11Desktop(t *testing.T, vncSocket, password string) *desktop.Desktop {
	t.Helper()
	display := 0
	for range 100 {
		n := 300 + mrand.IntN(20000)
		_, errLock := os.Stat(fmt.Sprintf("/tmp/.X%d-lock", n))
		_, errSock := os.Stat(fmt.Sprintf("/tmp/.X11-unix/X%d", n))
		if os.IsNotExist(errLock) && os.IsNotExist(errSock) {
			display = n
			break
		}
	}
	d := desktop.New(desktop.Config{Display: display, Width: 1024, Height: 640, VNCPassword: password,
		VNCSocket: vncSocket, RuntimeDir: t.TempDir(), Env: []string{"HOME=" + t.TempDir()}}, nil)
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
