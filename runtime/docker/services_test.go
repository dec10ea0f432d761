package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/image"
	"github.com/drydockhq/drydock/runtime/runtimetest"
	"github.com/drydockhq/drydock/toolbox"
)

// The services toolboxd runs in a real sandbox, on every sandbox kind: under
// gVisor they meet its kernel (its own /dev, pipes, unix sockets and
// loopback TCP), not the host's. e2e's TestJupyterInRealSandbox and
// TestDesktopSandboxThroughToolboxd go further, under runc.

// serviceSandbox creates a sandbox of img with the default limits, ready,
// and a toolbox client for it.
func serviceSandbox(t *testing.T, s setup, rt *Runtime, img string, profile drydock.Profile) (*drydock.Sandbox, *toolbox.Client) {
	t.Helper()
	sb, err := rt.Create(t.Context(), drydock.SandboxSpec{JobID: "svc-" + drydock.RandomHex(4), Image: img, Profile: profile})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rt.Destroy(ctx, sb.ID); err != nil {
			t.Errorf("Destroy: %v", err)
		}
	})
	c := toolbox.New(sb.Endpoint, sb.Token)
	t.Cleanup(c.Close)
	return sb, c
}

// Jupyter: toolboxd starts the Jupyter server on request, and a kernel
// started through its API runs Python over the kernel's WebSocket.
func TestJupyterKernelAnswers(t *testing.T) {
	t.Parallel()
	forKinds(t, func(t *testing.T, s setup) {
		s.image = runtimetest.CurrentImage(t, s.host)
		rt := s.newRuntime(t)
		sb, c := serviceSandbox(t, s, rt, s.image, drydock.ProfileHeadless)
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		if err := c.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Transport: c.Transport(), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		call := func(method, path, body string) (int, []byte) {
			t.Helper()
			req, _ := http.NewRequestWithContext(ctx, method, c.BaseURL()+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+sb.Token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, data
		}
		base := "/jobs/" + sb.ID + "/jupyter/"
		start := time.Now()
		if code, data := call("POST", "/v1/jupyter/start", `{"base_url": "`+base+`"}`); code != 200 {
			t.Fatalf("start Jupyter: %d %s", code, data)
		}
		t.Logf("Jupyter answered %s after the start request", time.Since(start).Round(time.Millisecond))
		proxy := "/v1/jupyter/proxy" + base
		var kern struct{ ID string }
		code, data := call("POST", proxy+"api/kernels", `{"name": "python3"}`)
		if code != 201 || json.Unmarshal(data, &kern) != nil || kern.ID == "" {
			t.Fatalf("start a kernel: %d %s", code, data)
		}
		conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(c.BaseURL(), "http")+proxy+"api/kernels/"+kern.ID+"/channels", &websocket.DialOptions{
			HTTPClient: &http.Client{Transport: c.Transport()},
			HTTPHeader: http.Header{"Authorization": {"Bearer " + sb.Token}},
		})
		if err != nil {
			t.Fatalf("the kernel's WebSocket: %v", err)
		}
		defer conn.CloseNow()
		start = time.Now()
		got, err := runtimetest.JupyterExecute(ctx, conn, "import os; 6 * 7, os.getcwd()")
		if err != nil {
			t.Fatal(err)
		}
		if got != "(42, '/workspace')" {
			t.Errorf("the kernel answered %q; want (42, '/workspace')", got)
		}
		t.Logf("first execution over the kernel's WebSocket: %s", time.Since(start).Round(time.Millisecond))
		conn.Close(websocket.StatusNormalClosure, "")
	})
}

// The live desktop: in the desktop image Xvfb and the VNC server come up,
// a window a command opens shows in a screenshot, and VNC answers through
// toolboxd with its RFB banner.
func TestDesktopAnswers(t *testing.T) {
	t.Parallel()
	forKinds(t, func(t *testing.T, s setup) {
		s.image = currentDesktopImage(t, s.host)
		rt := s.newRuntime(t)
		sb, c := serviceSandbox(t, s, rt, s.image, drydock.ProfileDesktop)
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		start := time.Now()
		if err := c.WaitReady(ctx, "display", "vnc"); err != nil {
			rd, _ := c.Ready(ctx)
			t.Fatalf("the desktop is not ready: %v (%+v)", err, rd)
		}
		t.Logf("display and VNC ready %s after the create", time.Since(start).Round(time.Millisecond))

		blank, err := c.Screenshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// From a shell session, whose background jobs live on (exec ends
		// the command's process group with it).
		sess, err := c.CreateSession(ctx, toolbox.SessionRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if r, err := c.Run(ctx, sess.ID, toolbox.RunRequest{Command: "DISPLAY=:1 xterm -geometry 100x30+100+100 -bg white -fg black -e 'sleep 600' >/dev/null 2>&1 &"}); err != nil || r.ExitCode != 0 {
			t.Fatalf("open a window: %+v %v", r, err)
		}
		shown := false
		for deadline := time.Now().Add(30 * time.Second); !shown && time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
			shot, err := c.Screenshot(ctx)
			shown = err == nil && string(shot.PNG) != string(blank.PNG)
		}
		if !shown {
			t.Error("no screenshot in 30 s shows the window a command opened")
		}

		ws, _, err := websocket.Dial(ctx, c.BaseURL()+"/v1/desktop/vnc", &websocket.DialOptions{
			HTTPClient:   &http.Client{Transport: c.Transport()},
			HTTPHeader:   http.Header{"Authorization": {"Bearer " + sb.Token}},
			Subprotocols: []string{"binary"},
		})
		if err != nil {
			t.Fatalf("VNC's WebSocket: %v", err)
		}
		defer ws.CloseNow()
		if _, banner, err := ws.Read(ctx); err != nil || !strings.HasPrefix(string(banner), "RFB 003.00") {
			t.Fatalf("VNC's banner %q: %v", banner, err)
		}
		ws.Close(websocket.StatusNormalClosure, "")
	})
}

var desktopImages sync.Map // engine host -> *imageOnce

// currentDesktopImage is the real desktop image (DRYDOCK_TEST_IMAGE_DESKTOP)
// with this tree's toolboxd, built once per engine, under its own tag.
func currentDesktopImage(t *testing.T, host string) string {
	t.Helper()
	base := os.Getenv("DRYDOCK_TEST_IMAGE_DESKTOP")
	if base == "" {
		t.Skip("DRYDOCK_TEST_IMAGE_DESKTOP is not set: no desktop image to test in (build one with drydock image build --profile desktop)")
	}
	v, _ := desktopImages.LoadOrStore(host, &imageOnce{})
	o := v.(*imageOnce)
	o.once.Do(func() {
		dir, err := os.MkdirTemp("", "dd-toolboxd-")
		if err != nil {
			o.err = err
			return
		}
		defer os.RemoveAll(dir)
		bin := filepath.Join(dir, "toolboxd")
		cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/drydockhq/drydock/cmd/toolboxd")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			o.err = fmt.Errorf("build toolboxd: %v\n%s", err, out)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		o.ref, o.err = image.WithToolboxd(ctx, image.Options{Profile: drydock.ProfileDesktop, Toolboxd: bin, DockerHost: host}, base)
	})
	if o.err != nil {
		t.Fatalf("desktop image with this tree's toolboxd: %v", o.err)
	}
	return o.ref
}
