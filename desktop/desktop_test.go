package desktop

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drydockhq/drydock/toolbox"
)

// RequireDesktop skips the test unless the X tools the desktop drives are
// installed (scripts/testenv/sandbox-tools.sh installs them).
func RequireDesktop(t testing.TB, extra ...string) {
	t.Helper()
	for _, bin := range append([]string{"Xvfb", "x11vnc", "xdotool", "fluxbox"}, extra...) {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed; run scripts/testenv/sandbox-tools.sh to test the desktop", bin)
		}
	}
}

// freeDisplay picks a display number that no X server on this machine uses,
// so that tests run in parallel with each other and with other packages.
func freeDisplay(t testing.TB) int {
	t.Helper()
	for range 100 {
		n := 300 + rand.IntN(20000)
		_, errSock := os.Stat(xSocket(n))
		_, errLock := os.Stat(fmt.Sprintf("/tmp/.X%d-lock", n))
		if os.IsNotExist(errSock) && os.IsNotExist(errLock) {
			return n
		}
	}
	t.Fatal("no free X display number")
	return 0
}

func testLogger(t testing.TB) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("DRYDOCK_TEST_VERBOSE") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
}

// testConfig is a desktop on a free display with its files in the test's
// temporary directories.
func testConfig(t testing.TB) Config {
	return Config{
		Display:    freeDisplay(t),
		RuntimeDir: t.TempDir(),
		VNCSocket:  filepath.Join(t.TempDir(), "vnc.sock"),
		Env:        []string{"HOME=" + t.TempDir()},
	}
}

// setup starts a desktop on a free display and waits until it is ready.
func setup(t testing.TB, modify func(*Config)) *Desktop {
	t.Helper()
	RequireDesktop(t)
	cfg := testConfig(t)
	if modify != nil {
		modify(&cfg)
	}
	d := New(cfg, testLogger(t))
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(xSocket(cfg.Display)); err == nil {
			t.Errorf("X socket %s left behind", xSocket(cfg.Display))
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := d.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return d
}

// output collects a process's output for tests that wait for a line.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// startClient starts an X client on the desktop and stops it at cleanup.
func startClient(t *testing.T, d *Desktop, name string, args ...string) *output {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed; run scripts/testenv/sandbox-tools.sh", name)
	}
	out := new(output)
	cmd := exec.Command(name, args...)
	cmd.Env = d.env()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return out
}

// waitFor polls cond until it holds or the test's patience runs out.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func screenshot(t *testing.T, d *Desktop) (*image.RGBA, float64) {
	t.Helper()
	data, scale, err := d.Screenshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	rgba := image.NewRGBA(img.Bounds())
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			rgba.Set(x, y, img.At(x, y))
		}
	}
	return rgba, scale
}

// brightness returns the mean and variance of the grey level inside r.
func brightness(img *image.RGBA, r image.Rectangle) (mean, variance float64) {
	r = r.Intersect(img.Rect)
	var sum, sq, n float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			i := img.PixOffset(x, y)
			g := (float64(img.Pix[i]) + float64(img.Pix[i+1]) + float64(img.Pix[i+2])) / 3
			sum += g
			sq += g * g
			n++
		}
	}
	mean = sum / n
	return mean, sq/n - mean*mean
}

func TestScreenshotShowsAWindow(t *testing.T) {
	t.Parallel()
	d := setup(t, nil)
	window := image.Rect(300, 250, 800, 450)

	before, scale := screenshot(t, d)
	if scale != 1 || before.Rect.Dx() != 1280 || before.Rect.Dy() != 800 {
		t.Fatalf("screenshot %v at scale %v, want 1280x800 at 1", before.Rect, scale)
	}
	if mean, _ := brightness(before, window); mean > 40 {
		t.Fatalf("empty desktop is already bright (%.0f) where the window will be", mean)
	}

	startClient(t, d, "xmessage", "-geometry", "600x300+250+200", "-bg", "white", "-fg", "black",
		"drydock screenshot test: a window with some text in it")
	var after *image.RGBA
	waitFor(t, "the window to appear in a screenshot", func() bool {
		after, _ = screenshot(t, d)
		mean, _ := brightness(after, window)
		return mean > 150
	})
	if _, variance := brightness(after, after.Rect); variance < 100 {
		t.Errorf("screenshot looks blank: grey variance %.1f", variance)
	}
}

// xev prints the events its window receives, which shows that actions reach
// an application, not only that xdotool exited 0.
func TestActionsReachAnApplication(t *testing.T) {
	t.Parallel()
	d := setup(t, nil)
	ctx := t.Context()
	ev := startClient(t, d, "xev", "-geometry", "600x400+100+100")
	waitFor(t, "xev's window", func() bool { return bytes.Contains([]byte(ev.String()), []byte("Expose event")) })

	do := func(a Action) *Result {
		t.Helper()
		r, err := d.Do(ctx, a)
		if err != nil {
			t.Fatalf("%s: %v", a.Action, err)
		}
		return r
	}
	expect := func(what string, re string) {
		t.Helper()
		rx := regexp.MustCompile(re)
		waitFor(t, what, func() bool { return rx.MatchString(ev.String()) })
	}
	count := func(re string) int { return len(regexp.MustCompile(re).FindAllString(ev.String(), -1)) }

	do(Action{Action: ActionMouseMove, Coordinate: &Point{400, 300}})
	if r := do(Action{Action: ActionCursorPosition}); *r.Cursor != (Point{400, 300}) {
		t.Fatalf("cursor at %v after moving to [400, 300]", *r.Cursor)
	}
	do(Action{Action: ActionLeftClick, Coordinate: &Point{420, 320}})
	expect("a left button press", `ButtonPress event(?s:.*?)button 1,`)
	if r := do(Action{Action: ActionCursorPosition}); *r.Cursor != (Point{420, 320}) {
		t.Fatalf("cursor at %v after clicking at [420, 320]", *r.Cursor)
	}

	do(Action{Action: ActionType, Text: "hi"})
	expect("typed keys", `keysym 0x68, h\)(?s:.*)keysym 0x69, i\)`)
	do(Action{Action: ActionKey, Text: "ctrl+Return"})
	expect("a key combo", `state 0x4,(?s:[^}]*?)keysym 0xff0d, Return\)`)

	do(Action{Action: ActionRightClick, Coordinate: &Point{430, 330}})
	expect("a right button press", `ButtonPress event(?s:.*?)button 3,`)
	before := count(`ButtonPress event[^\n]*\n[^\n]*\n[^\n]*button 1,`)
	do(Action{Action: ActionDoubleClick, Coordinate: &Point{430, 330}})
	waitFor(t, "two more left presses", func() bool {
		return count(`ButtonPress event[^\n]*\n[^\n]*\n[^\n]*button 1,`) >= before+2
	})
	do(Action{Action: ActionScroll, Coordinate: &Point{430, 330}, ScrollDirection: "down", ScrollAmount: 2})
	expect("scroll-down presses", `button 5,(?s:.*)button 5,`)

	do(Action{Action: ActionLeftClickDrag, StartCoordinate: &Point{200, 200}, Coordinate: &Point{500, 400}})
	expect("a drag: motion with button 1 held", `MotionNotify event(?s:[^}]*?)state 0x100,`)
	if r := do(Action{Action: ActionCursorPosition}); *r.Cursor != (Point{500, 400}) {
		t.Fatalf("cursor at %v after dragging to [500, 400]", *r.Cursor)
	}
}

func TestScaledScreenshotsMapCoordinates(t *testing.T) {
	t.Parallel()
	d := setup(t, func(c *Config) { c.Width, c.Height = 1920, 1080 })
	img, scale := screenshot(t, d)
	if img.Rect.Dx() != 1280 || img.Rect.Dy() != 720 {
		t.Fatalf("screenshot is %v, want 1280x720", img.Rect)
	}
	shot, err := d.Capture(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if shot.Width != 1280 || shot.Height != 720 || shot.ScreenWidth != 1920 || shot.ScreenHeight != 1080 {
		t.Errorf("capture geometry %dx%d of %dx%d", shot.Width, shot.Height, shot.ScreenWidth, shot.ScreenHeight)
	}
	if want := 2.0 / 3; scale < want-1e-9 || scale > want+1e-9 {
		t.Fatalf("scale %v, want %v", scale, want)
	}

	ctx := t.Context()
	if _, err := d.Do(ctx, Action{Action: ActionMouseMove, Coordinate: &Point{640, 360}}); err != nil {
		t.Fatal(err)
	}
	out, err := d.xdotoolOutput(ctx, "getmouselocation")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^x:960 y:540 `).MatchString(out) {
		t.Errorf("screen pointer at %q, want x:960 y:540", out)
	}
	r, err := d.Do(ctx, Action{Action: ActionCursorPosition})
	if err != nil {
		t.Fatal(err)
	}
	if *r.Cursor != (Point{640, 360}) {
		t.Errorf("cursor_position %v, want [640, 360] in screenshot space", *r.Cursor)
	}
	if _, err := d.Do(ctx, Action{Action: ActionLeftClick, Coordinate: &Point{1280, 10}}); err == nil {
		t.Error("a click right of the screenshot was accepted")
	}
}

func TestCrashedComponentsAreRestarted(t *testing.T) {
	t.Parallel()
	d := setup(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	for _, c := range []*component{d.vnc, d.disp} {
		pid := c.pid()
		if pid == 0 {
			t.Fatalf("%s has no process", c.name)
		}
		restarts := c.restarts.Load()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitFor(t, c.name+" to notice its process died", func() bool { return c.restarts.Load() > restarts })
		if err := d.WaitReady(ctx); err != nil {
			t.Fatalf("after killing %s: %v", c.name, err)
		}
		if c.pid() == pid {
			t.Fatalf("%s still has the killed pid", c.name)
		}
	}
	// The display came back with its window manager and VNC server.
	if _, _, err := d.Screenshot(ctx); err != nil {
		t.Fatal(err)
	}
	if got := d.Restarts(); got[toolbox.ComponentWindowManager] == 0 {
		t.Errorf("window manager was not restarted with the display: %v", got)
	}
}

func BenchmarkScreenshot(b *testing.B) {
	d := setup(b, nil)
	ctx := b.Context()
	for b.Loop() {
		if _, _, err := d.Screenshot(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// A busier screen costs more to encode than an empty one.
func BenchmarkScreenshotWithWindows(b *testing.B) {
	RequireDesktop(b, "xlogo", "xclock", "xmessage")
	d := setup(b, nil)
	for _, args := range [][]string{
		{"xlogo", "-geometry", "500x500+0+0"},
		{"xclock", "-geometry", "300x300+600+50", "-update", "1"},
		{"xmessage", "-geometry", "700x300+400+450", strings.Repeat("Lorem ipsum dolor sit amet. ", 20)},
	} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = d.env()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	time.Sleep(time.Second)
	ctx := b.Context()
	size := 0
	for b.Loop() {
		png, _, err := d.Screenshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		size = len(png)
	}
	b.ReportMetric(float64(size), "png-bytes")
}

func BenchmarkScreenshotScaled(b *testing.B) {
	d := setup(b, func(c *Config) { c.Width, c.Height = 1920, 1080 })
	ctx := b.Context()
	for b.Loop() {
		if _, _, err := d.Screenshot(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// The alternatives that spawn a process, measured for comparison.
func BenchmarkScreenshotXWD(b *testing.B) {
	d := setup(b, nil)
	RequireDesktop(b, "xwd")
	ctx := b.Context()
	for b.Loop() {
		raw, err := d.xwdCapture(ctx)
		if err != nil {
			b.Fatal(err)
		}
		img, err := decodeXWD(raw)
		if err != nil {
			b.Fatal(err)
		}
		if err := pngEncoder.Encode(io.Discard, img); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScreenshotImageMagick(b *testing.B) {
	d := setup(b, nil)
	RequireDesktop(b, "import")
	for b.Loop() {
		cmd := exec.Command("import", "-window", "root", "png:-")
		cmd.Env = d.env()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMouseMove(b *testing.B) {
	d := setup(b, nil)
	ctx := b.Context()
	i := 0
	for b.Loop() {
		i++
		if _, err := d.Do(ctx, Action{Action: ActionMouseMove, Coordinate: &Point{100 + i%500, 100}}); err != nil {
			b.Fatal(err)
		}
	}
}

// Without the framebuffer file (a display this package did not start),
// screenshots come from xwd and look the same.
func TestScreenshotFallsBackToXWD(t *testing.T) {
	t.Parallel()
	RequireDesktop(t, "xwd")
	d := setup(t, nil)
	startClient(t, d, "xmessage", "-geometry", "400x200+100+100", "-bg", "white", "fallback")
	window := image.Rect(150, 150, 450, 250)
	waitFor(t, "the window", func() bool {
		img, _ := screenshot(t, d)
		mean, _ := brightness(img, window)
		return mean > 150
	})
	// Xvfb keeps its mapping of the unlinked file; only we lose the path.
	if err := os.Remove(d.fbFile()); err != nil {
		t.Fatal(err)
	}
	img, scale := screenshot(t, d)
	if mean, _ := brightness(img, window); mean < 150 || scale != 1 {
		t.Errorf("xwd screenshot misses the window: brightness %.0f, scale %v", mean, scale)
	}
}

func TestDisplayInUseIsReported(t *testing.T) {
	t.Parallel()
	d := setup(t, nil)
	other := New(Config{Display: d.cfg.Display, RuntimeDir: t.TempDir()}, testLogger(t))
	if _, err := other.xvfbCommand(); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("starting on a taken display: %v", err)
	}
}

// BenchmarkStartToReady measures Start until display, window manager and
// VNC all answer.
func BenchmarkStartToReady(b *testing.B) {
	RequireDesktop(b)
	for b.Loop() {
		d := New(Config{Display: freeDisplay(b), RuntimeDir: b.TempDir(), VNCSocket: filepath.Join(b.TempDir(), "vnc.sock"),
			Env: []string{"HOME=" + b.TempDir()}}, nil)
		if err := d.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		if err := d.WaitReady(b.Context()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		d.Close()
		b.StartTimer()
	}
}

// An action that comes while the display is still starting waits for it
// instead of failing, and one on a display that never comes up gives up
// with a reason when its context ends.
func TestActionsWaitForTheDisplay(t *testing.T) {
	t.Parallel()
	RequireDesktop(t)
	d := New(testConfig(t), testLogger(t))

	// Not started: the wait ends with the caller's context.
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	start := time.Now()
	_, err := d.Do(ctx, Action{Action: ActionScreenshot})
	cancel()
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("an action on a display that never started: %v after %s", err, time.Since(start))
	}

	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	// At once, before the display has had time to come up: a screenshot
	// (toolboxd's screenshot route, which the computer tool's screenshot
	// action takes), then an action.
	ctx, cancel = context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if png, _, err := d.Screenshot(ctx); err != nil || len(png) == 0 {
		t.Fatalf("the first screenshot of a starting display: %d bytes, %v", len(png), err)
	}
	res, err := d.Do(ctx, Action{Action: ActionScreenshot})
	if err != nil {
		t.Fatalf("the first action on a starting display: %v", err)
	}
	if len(res.PNG) == 0 {
		t.Fatal("the first screenshot is empty")
	}
}
