package e2e_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/api"
	tbserver "github.com/drydockhq/drydock/toolbox/server"
)

// A desktop link opened as soon as the API hands it out, when the job's
// sandbox exists but neither toolboxd nor the desktop in it is up yet,
// shows the desktop once it is: the page does not stay on its first failed
// connection.
func TestBrowserDesktopLinkBeforeTheDesktopIsUp(t *testing.T) {
	t.Parallel()
	requireX11Tools(t)
	ctx := newBrowser(t)
	sockDir, err := os.MkdirTemp("", "ddlink")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	const password = "pw-e2e-2"
	var asked atomic.Int64 // lookups of the sandbox, one per connection tried
	sb := &drydock.Sandbox{ID: "sb-e2e-link", State: drydock.SandboxRunning, Token: "tb-token", VNCPassword: password,
		Endpoint: drydock.Endpoint{Network: "unix", Address: filepath.Join(sockDir, "tb.sock")}}
	hs, ws := inProcessAPI(t, sb, &asked)
	job := runningJob(t, ws, "0193e2e0-0000-7000-8000-0000000011e7", "Show the desktop", drydock.ProfileDesktop, sb.ID)
	resp, err := http.Post(hs.URL+"/v1/jobs/"+job.ID+"/desktop/link", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var link api.Link
	err = json.NewDecoder(resp.Body).Decode(&link)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil {
		t.Fatalf("desktop link: %d %v", resp.StatusCode, err)
	}

	within(t, ctx, 15*time.Second, chromedp.Navigate(link.URL))
	for deadline := time.Now().Add(30 * time.Second); asked.Load() < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the page tried %d connections in 30s; it shows %q", asked.Load(),
				eval[string](t, ctx, `document.querySelector("header").innerText`))
		}
	}

	// Now toolboxd listens, and the desktop behind it comes up.
	d := startX11Desktop(t, filepath.Join(sockDir, "vnc.sock"), password)
	serveToolboxd(t, sb.Endpoint.Address, tbserver.Config{Workspace: t.TempDir(), Token: sb.Token, Desktop: desktopAdapter{d},
		StateDir: filepath.Join(sockDir, "state"), Profile: drydock.ProfileDesktop})
	waitJS(t, ctx, time.Minute, `document.getElementById("desktop-state").textContent == "connected" && document.querySelector("#screen canvas")?.width == 1024`)
}
