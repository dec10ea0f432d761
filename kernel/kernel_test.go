package kernel

import (
	"bytes"
	"context"
	"image/png"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/google/go-cmp/cmp"
)

// RequirePython skips the test unless Debian's Jupyter packages are
// installed (scripts/testenv/sandbox-tools.sh installs them).
func RequirePython(t testing.TB) string {
	t.Helper()
	var cfg Config
	cfg.setDefaults()
	if err := exec.Command(cfg.Python, "-c", "import ipykernel, zmq").Run(); err != nil {
		t.Skipf("%s cannot import ipykernel (%v); run scripts/testenv/sandbox-tools.sh", cfg.Python, err)
	}
	return cfg.Python
}

func testLogger(t testing.TB) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("DRYDOCK_TEST_VERBOSE") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
}

// setup starts a kernel working in a temporary directory.
func setup(t testing.TB, modify func(*Config)) *Kernel {
	t.Helper()
	// A home of its own, so that IPython, matplotlib and Jupyter write
	// their caches there rather than in the user's.
	cfg := Config{Dir: t.TempDir(), RuntimeDir: t.TempDir(), Env: []string{"HOME=" + t.TempDir()}}
	if modify != nil {
		modify(&cfg)
	}
	k := New(cfg, testLogger(t))
	if err := k.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := k.Close(); err != nil {
			t.Error(err)
		}
	})
	return k
}

func run(t *testing.T, k *Kernel, lang, code string) *Result {
	t.Helper()
	res, err := k.Execute(t.Context(), lang, code, 60*time.Second)
	if err != nil {
		t.Fatalf("execute %q: %v", code, err)
	}
	return res
}

func resultText(t *testing.T, r *Result) string {
	t.Helper()
	for _, o := range r.Outputs {
		if o.Kind == "result" {
			return o.Text
		}
	}
	t.Fatalf("no result in %+v", r)
	return ""
}

func TestPythonKeepsStateAndReturnsOutput(t *testing.T) {
	t.Parallel()
	RequirePython(t)
	k := setup(t, nil)

	r := run(t, k, Python, "x = 1\nprint('hello')\nimport sys; print('warning', file=sys.stderr)\nx")
	if r.Stdout() != "hello\n" || r.Stderr() != "warning\n" || resultText(t, r) != "1" || r.Error != nil {
		t.Fatalf("first call: %+v", r)
	}
	r = run(t, k, Python, "print('a', flush=True)\ndisplay('shown')\nprint('b')\nx + 1")
	var kinds []string
	for _, o := range r.Outputs {
		kinds = append(kinds, o.Kind+":"+strings.TrimSpace(o.Text))
	}
	if want := []string{"stream:a", "display:'shown'", "stream:b", "result:2"}; !cmp.Equal(kinds, want) {
		t.Errorf("outputs out of order: %v, want %v", kinds, want)
	}
	if got := resultText(t, r); got != "2" {
		t.Errorf("x + 1 = %q in the next call, want 2", got)
	}
	if r.ExecutionCount != 2 {
		t.Errorf("execution count %d, want 2", r.ExecutionCount)
	}
	// The working directory is the workspace.
	r = run(t, k, Python, "import os; os.getcwd()")
	if got := resultText(t, r); got != "'"+k.cfg.Dir+"'" {
		t.Errorf("cwd %s, want %s", got, k.cfg.Dir)
	}
}

func TestPythonReturnsImages(t *testing.T) {
	t.Parallel()
	python := RequirePython(t)
	k := setup(t, nil)

	code := "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"
	if exec.Command(python, "-c", "import matplotlib").Run() != nil {
		t.Log("matplotlib is not installed; displaying a PNG through IPython instead")
		code = "import base64\nfrom IPython.display import Image, display\n" +
			"display(Image(data=base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==')))"
	}
	r := run(t, k, Python, code)
	if r.Error != nil {
		t.Fatalf("error: %+v", r.Error)
	}
	var pngs int
	for _, o := range r.Outputs {
		for _, img := range o.Images {
			if img.MIME != "image/png" {
				continue
			}
			if _, err := png.DecodeConfig(bytes.NewReader(img.Data)); err != nil {
				t.Errorf("image is not a PNG: %v", err)
			}
			pngs++
		}
	}
	if pngs != 1 {
		t.Errorf("%d PNG images in %+v, want 1", pngs, r.Outputs)
	}
}

func TestPythonErrorHasPlainTraceback(t *testing.T) {
	t.Parallel()
	RequirePython(t)
	k := setup(t, nil)

	r := run(t, k, Python, "def f():\n    return 1 / 0\nprint('before')\nf()")
	if r.Error == nil || r.Error.Name != "ZeroDivisionError" || r.ExitCode != 1 {
		t.Fatalf("want a ZeroDivisionError, got %+v", r)
	}
	if r.Stdout() != "before\n" {
		t.Errorf("stdout %q", r.Stdout())
	}
	if !strings.Contains(r.Error.Traceback, "return 1 / 0") || strings.Contains(r.Error.Traceback, "\x1b") {
		t.Errorf("traceback should show the line and no escape codes:\n%q", r.Error.Traceback)
	}
	if r := run(t, k, Python, "'still alive'"); resultText(t, r) != "'still alive'" {
		t.Errorf("kernel unusable after an error: %+v", r)
	}
}

func TestPythonTimeoutInterrupts(t *testing.T) {
	t.Parallel()
	RequirePython(t)
	k := setup(t, nil)
	run(t, k, Python, "kept = 'state'")

	start := time.Now()
	r, err := k.Execute(t.Context(), Python, "print('spinning', flush=True)\nwhile True: pass", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimedOut || r.Restarted || r.Error == nil || r.Error.Name != "KeyboardInterrupt" {
		t.Fatalf("want an interrupted timeout without restart, got %+v (error %+v)", r, r.Error)
	}
	if r.Stdout() != "spinning\n" {
		t.Errorf("output before the timeout lost: %q", r.Stdout())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("interrupt took %v", d)
	}
	if r := run(t, k, Python, "kept"); resultText(t, r) != "'state'" {
		t.Errorf("state lost after an interrupt: %+v", r)
	}
	// An interrupt while idle is harmless.
	if err := k.Interrupt(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if r := run(t, k, Python, "kept"); resultText(t, r) != "'state'" || r.Restarted {
		t.Errorf("idle interrupt hurt the kernel: %+v", r)
	}
}

func TestPythonTimeoutRestartsAKernelThatIgnoresInterrupts(t *testing.T) {
	t.Parallel()
	RequirePython(t)
	k := setup(t, func(c *Config) { c.InterruptGrace = 500 * time.Millisecond })
	run(t, k, Python, "lost = 1")

	code := "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: time.sleep(0.05)"
	r, err := k.Execute(t.Context(), Python, code, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimedOut || !r.Restarted {
		t.Fatalf("want a restart after the ignored interrupt, got %+v", r)
	}
	r = run(t, k, Python, "lost")
	if r.Error == nil || r.Error.Name != "NameError" {
		t.Errorf("state survived a restart: %+v", r)
	}
	if k.Restarts() < 1 {
		t.Errorf("restarts = %d", k.Restarts())
	}
}

func TestPythonRestartAndRecovery(t *testing.T) {
	t.Parallel()
	RequirePython(t)
	k := setup(t, nil)
	ctx := t.Context()

	run(t, k, Python, "a = 1")
	if err := k.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if r := run(t, k, Python, "a"); r.Error == nil || r.Error.Name != "NameError" {
		t.Fatalf("state survived Restart: %+v", r)
	}

	// The kernel process dies under running code: the call says so, and
	// the next one gets a fresh kernel.
	r := run(t, k, Python, "import os; os._exit(3)")
	if !r.Restarted || r.Error == nil {
		t.Fatalf("want a restarted result when the kernel dies, got %+v", r)
	}
	if r := run(t, k, Python, "40 + 2"); resultText(t, r) != "42" {
		t.Fatalf("no fresh kernel after a crash: %+v", r)
	}

	// The helper dies: it is replaced and reconnects to the same kernel,
	// whose state survives.
	run(t, k, Python, "survivor = 'yes'")
	k.mu.Lock()
	helperPID := k.helper.proc.cmd.Process.Pid
	k.mu.Unlock()
	if err := syscall.Kill(helperPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := k.Execute(ctx, Python, "survivor", 30*time.Second)
		if err == nil && !r.Restarted {
			if got := resultText(t, r); got != "'yes'" {
				t.Fatalf("state lost with the helper: %+v", r)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kernel unusable after the helper died: %v %+v", err, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestExecuteRejectsUnknownLanguage(t *testing.T) {
	t.Parallel()
	k := New(Config{}, nil)
	_, err := k.Execute(t.Context(), "cobol", "DISPLAY 'HI'", time.Second)
	if drydock.ErrorCode(err) != drydock.EINVALID {
		t.Errorf("error %v, want invalid", err)
	}
	_, err = k.Execute(t.Context(), Python, "1", time.Second)
	if drydock.ErrorCode(err) != drydock.EUNAVAILABLE {
		t.Errorf("python before Start: %v, want unavailable", err)
	}
}

func TestFirstPythonResultIsFast(t *testing.T) {
	t.Parallel()
	RequirePython(t)
	start := time.Now()
	k := setup(t, nil)
	r, err := k.Execute(t.Context(), Python, "1 + 1", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if resultText(t, r) != "2" {
		t.Fatalf("%+v", r)
	}
	d := time.Since(start)
	t.Logf("first Python result %v after Start", d)
	// Generous for a loaded CI machine; the target (3 s) is measured by
	// BenchmarkFirstPythonResult.
	if d > 20*time.Second {
		t.Errorf("first result took %v", d)
	}
}

func BenchmarkFirstPythonResult(b *testing.B) {
	RequirePython(b)
	for b.Loop() {
		k := New(Config{Dir: b.TempDir()}, nil)
		if err := k.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		if _, err := k.Execute(b.Context(), Python, "1 + 1", 30*time.Second); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		k.Close()
		b.StartTimer()
	}
}

func BenchmarkPythonRoundTrip(b *testing.B) {
	RequirePython(b)
	k := setup(b, nil)
	ctx := context.Background()
	if err := k.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := k.Execute(ctx, Python, "1", 10*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

func TestOutputIsCapped(t *testing.T) {
	t.Parallel()
	c := collector{res: &Result{}, limit: 10, maxImages: 1}
	c.stream("stdout", "0123456")
	c.stream("stdout", "789abcdef")
	c.stream("stderr", "err")
	png1x1 := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	c.output("display", map[string]any{"image/png": png1x1})
	c.output("display", map[string]any{"image/png": png1x1, "text/plain": "\x1b[31m<Figure>\x1b[0m"})
	if c.res.Stdout() != "0123456789" || c.res.Stderr() != "err" || !c.res.Truncated {
		t.Errorf("streams %q %q truncated=%v", c.res.Stdout(), c.res.Stderr(), c.res.Truncated)
	}
	outs := c.res.Outputs
	if len(outs) != 4 || len(outs[2].Images) != 1 || len(outs[3].Images) != 0 {
		t.Fatalf("images not capped at one: %+v", outs)
	}
	if outs[3].Text != "<Figure>" {
		t.Errorf("text %q", outs[3].Text)
	}
	c.stream("stderr", "ü") // two bytes where one fits: dropped whole
	c.limit = 4
	c.written = nil
	c.stream("stdout", "abcü")
	if got := c.res.Outputs[len(c.res.Outputs)-1].Text; got != "abc" {
		t.Errorf("cut inside a character: %q", got)
	}
}
