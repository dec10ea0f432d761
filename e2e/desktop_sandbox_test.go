package e2e_test

import (
	"bytes"
	"image"
	"image/png"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/runtime/docker"
	"github.com/drydockhq/drydock/toolbox"
)

// The sandbox's done-criterion: a desktop sandbox on Docker and on Podman
// runs shell, file, Python, TypeScript and xdotool operations through
// toolboxd, takes a screenshot showing a window it opened, serves VNC over a
// WebSocket, and is destroyed leaving no container or socket behind.
func TestDesktopSandboxThroughToolboxd(t *testing.T) {
	t.Parallel()
	for _, e := range engines() {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			host := os.Getenv(e.env)
			if host == "" {
				t.Skipf("%s not set: no %s engine (make test starts one)", e.env, e.name)
			}
			img := os.Getenv("DRYDOCK_TEST_IMAGE_DESKTOP")
			if img == "" {
				img = "drydock-sandbox:desktop"
			}
			stateDir := t.TempDir()
			rt, err := docker.New(docker.Options{Host: host, ServerID: "e2e-desktop-" + e.name, StateDir: stateDir})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			ctx := ctxT(t, 3*time.Minute)
			jobID := "0193dddd-0000-7000-8000-" + map[string]string{"docker": "000000000001", "podman": "000000000002"}[e.name]
			sb, err := rt.Create(ctx, drydock.SandboxSpec{JobID: jobID, Image: img, Profile: drydock.ProfileDesktop,
				Labels: map[string]string{drydock.LabelJob: jobID}})
			if err != nil {
				t.Fatal(err)
			}
			destroyed := false
			defer func() {
				if !destroyed {
					rt.Destroy(ctx, sb.ID)
				}
			}()
			c := toolbox.New(sb.Endpoint, sb.Token)
			defer c.Close()
			t0 := time.Now()
			if err := c.WaitReady(ctx, "display", "vnc", "kernel"); err != nil {
				rd, _ := c.Ready(ctx)
				t.Fatalf("not ready: %v (%+v)", err, rd)
			}
			t.Logf("%s: display, vnc and kernel ready %s after create", e.name, time.Since(t0).Round(time.Millisecond))

			// Shell: state persists across commands.
			sess, err := c.CreateSession(ctx, toolbox.SessionRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Run(ctx, sess.ID, toolbox.RunRequest{Command: "cd /workspace && export GREETING=hi && mkdir -p app"}); err != nil {
				t.Fatal(err)
			}
			r, err := c.Run(ctx, sess.ID, toolbox.RunRequest{Command: `echo "$GREETING from $(pwd) as $(id -u)"`})
			if err != nil || !strings.Contains(r.Output, "hi from /workspace as 1000") {
				t.Fatalf("shell: %+v %v", r, err)
			}
			// Files.
			if err := c.WriteFile(ctx, "app/main.ts", []byte("const n: number = 6 * 7;\nconsole.log(`answer ${n}`);\n")); err != nil {
				t.Fatal(err)
			}
			if b, err := c.ReadFile(ctx, "app/main.ts"); err != nil || !strings.Contains(string(b), "6 * 7") {
				t.Fatalf("read: %q %v", b, err)
			}
			// Python keeps state between calls.
			if _, err := c.RunCode(ctx, toolbox.CodeRequest{Language: "python", Code: "x = 40"}); err != nil {
				t.Fatal(err)
			}
			cr, err := c.RunCode(ctx, toolbox.CodeRequest{Language: "python", Code: "print(x + 2)"})
			if err != nil || cr.Error || !strings.Contains(outputs(cr), "42") {
				t.Fatalf("python: %+v %v", cr, err)
			}
			cr, err = c.RunCode(ctx, toolbox.CodeRequest{Language: "typescript", Code: "const n: number = 6 * 7; console.log(`ts ${n}`);"})
			if err != nil || cr.Error || !strings.Contains(outputs(cr), "ts 42") {
				t.Fatalf("typescript: %+v %v", cr, err)
			}
			// A window, then xdotool and a screenshot that shows it.
			blank, err := c.Screenshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Run(ctx, sess.ID, toolbox.RunRequest{Command: "DISPLAY=:1 xterm -geometry 100x30+100+100 -bg white -fg black -e 'echo DRYDOCK; sleep 600' >/dev/null 2>&1 &"}); err != nil {
				t.Fatal(err)
			}
			var shot *toolbox.Screenshot
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				time.Sleep(300 * time.Millisecond)
				if shot, err = c.Screenshot(ctx); err == nil && differs(t, blank.PNG, shot.PNG) > 0.02 {
					break
				}
			}
			if d := differs(t, blank.PNG, shot.PNG); d <= 0.02 {
				t.Fatalf("the screenshot does not show the window (%.3f of pixels changed)", d)
			}
			if _, err := c.DesktopAction(ctx, toolbox.DesktopAction{Action: "mouse_move", Coordinate: []int{300, 200}}); err != nil {
				t.Fatal(err)
			}
			pos, err := c.DesktopAction(ctx, toolbox.DesktopAction{Action: "cursor_position"})
			if err != nil || len(pos.Cursor) != 2 || pos.Cursor[0] != 300 || pos.Cursor[1] != 200 {
				t.Fatalf("cursor_position after mouse_move: %+v %v", pos, err)
			}
			if _, err := c.DesktopAction(ctx, toolbox.DesktopAction{Action: "left_click", Coordinate: []int{400, 300}}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.DesktopAction(ctx, toolbox.DesktopAction{Action: "type", Text: "ls"}); err != nil {
				t.Fatal(err)
			}
			// VNC over WebSocket through toolboxd: the RFB banner arrives.
			ws, _, err := websocket.Dial(ctx, c.BaseURL()+"/v1/desktop/vnc", &websocket.DialOptions{
				HTTPClient:   &http.Client{Transport: c.Transport()},
				HTTPHeader:   http.Header{"Authorization": {"Bearer " + sb.Token}},
				Subprotocols: []string{"binary"},
			})
			if err != nil {
				t.Fatalf("vnc websocket: %v", err)
			}
			_, banner, err := ws.Read(ctx)
			if err != nil || !strings.HasPrefix(string(banner), "RFB 003.00") {
				t.Fatalf("vnc banner %q: %v", banner, err)
			}
			ws.Close(websocket.StatusNormalClosure, "")
			// Unauthenticated VNC is refused.
			if _, resp, err := websocket.Dial(ctx, c.BaseURL()+"/v1/desktop/vnc", &websocket.DialOptions{HTTPClient: &http.Client{Transport: c.Transport()}}); err == nil || resp == nil || resp.StatusCode != 401 {
				t.Errorf("vnc without token: %v %v", resp, err)
			}

			if err := rt.Destroy(ctx, sb.ID); err != nil {
				t.Fatal(err)
			}
			destroyed = true
			if _, err := rt.Get(ctx, sb.ID); drydock.ErrorCode(err) != drydock.ENOTFOUND {
				t.Errorf("Get after destroy: %v", err)
			}
			if left, _ := os.ReadDir(stateDir); len(left) != 0 {
				t.Errorf("state left behind: %v", left)
			}
		})
	}
}

func outputs(r *toolbox.CodeResult) string {
	var b strings.Builder
	for _, o := range r.Outputs {
		b.WriteString(o.Text)
	}
	return b.String()
}

// differs returns the fraction of pixels that differ between two PNGs.
func differs(t *testing.T, a, b []byte) float64 {
	t.Helper()
	ia, err := png.Decode(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	ib, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	bounds := ia.Bounds().Intersect(ib.Bounds())
	diff, total := 0, 0
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 2 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 2 {
			total++
			if !same(ia, ib, x, y) {
				diff++
			}
		}
	}
	return float64(diff) / float64(max(total, 1))
}

func same(a, b image.Image, x, y int) bool {
	r1, g1, b1, _ := a.At(x, y).RGBA()
	r2, g2, b2, _ := b.At(x, y).RGBA()
	return r1 == r2 && g1 == g2 && b1 == b2
}
