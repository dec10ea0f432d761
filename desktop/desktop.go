package desktop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// Config describes the desktop to run. The zero value is usable: display :1,
// 1280x800x24, fluxbox, x11vnc on 127.0.0.1:5901 without a password.
type Config struct {
	// Display is the X display number.
	Display int
	// Width, Height and Depth give the screen geometry.
	Width, Height, Depth int
	// WindowManager is "fluxbox", "openbox", or "none".
	WindowManager string
	// VNCPassword protects the VNC server; empty means none (development).
	VNCPassword string
	// VNCSocket, if set, makes x11vnc listen on this unix socket instead of
	// TCP, so that no port is open in the sandbox at all.
	VNCSocket string
	// VNCPort is the TCP port x11vnc listens on at 127.0.0.1 when VNCSocket
	// is empty; default 5900+Display.
	VNCPort int
	// RuntimeDir holds the framebuffer file and the transient password
	// file; it is created with mode 0700. Default: a directory under
	// os.TempDir() named after the display.
	RuntimeDir string
	// MaxWidth and MaxHeight bound screenshots; default 1280x800.
	MaxWidth, MaxHeight int
	// Env is added to the environment of every process the desktop starts
	// (HOME matters to the window manager).
	Env []string
}

func (c *Config) setDefaults() {
	if c.Display == 0 {
		c.Display = 1
	}
	if c.Width == 0 {
		c.Width = 1280
	}
	if c.Height == 0 {
		c.Height = 800
	}
	if c.Depth == 0 {
		c.Depth = 24
	}
	if c.WindowManager == "" {
		c.WindowManager = "fluxbox"
	}
	if c.VNCPort == 0 {
		c.VNCPort = 5900 + c.Display
	}
	if c.RuntimeDir == "" {
		c.RuntimeDir = filepath.Join(os.TempDir(), fmt.Sprintf("drydock-desktop-%d", c.Display))
	}
	if c.MaxWidth == 0 {
		c.MaxWidth = 1280
	}
	if c.MaxHeight == 0 {
		c.MaxHeight = 800
	}
}

// Desktop supervises a virtual display, a window manager and a VNC server,
// and drives the display with xdotool.
type Desktop struct {
	cfg   Config
	log   *slog.Logger
	comps []*component
	disp  *component
	vnc   *component

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	closed bool
	// bridges tracks open VNC WebSocket bridges so Close can end them.
	bridges sync.WaitGroup
	ctx     context.Context
	// secret is the VNC password once SetVNCPassword changed it.
	secret vncSecret
}

// New returns a desktop for cfg; nothing runs until Start.
func New(cfg Config, logger *slog.Logger) *Desktop {
	cfg.setDefaults()
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	d := &Desktop{cfg: cfg, log: logger.With("component", "desktop")}
	d.disp = &component{
		name:    toolbox.ComponentDisplay,
		log:     d.log.With("process", "Xvfb"),
		command: d.xvfbCommand,
		probe:   d.probeDisplay,
	}
	d.comps = append(d.comps, d.disp)
	if cfg.WindowManager != "none" {
		d.comps = append(d.comps, &component{
			name:    toolbox.ComponentWindowManager,
			log:     d.log.With("process", cfg.WindowManager),
			command: d.wmCommand,
			probe:   d.probeWindowManager,
			after:   d.disp,
		})
	}
	d.vnc = &component{
		name:    toolbox.ComponentVNC,
		log:     d.log.With("process", "x11vnc"),
		command: d.vncCommand,
		probe:   d.probeVNC,
		after:   d.disp,
	}
	d.comps = append(d.comps, d.vnc)
	return d
}

// Display is the DISPLAY value for clients of this desktop (":1").
func (d *Desktop) Display() string { return ":" + strconv.Itoa(d.cfg.Display) }

// Size returns the screen size in pixels.
func (d *Desktop) Size() (width, height int) { return d.cfg.Width, d.cfg.Height }

// Scale is the factor from screen to screenshot coordinates (at most 1): a
// screenshot pixel (u, v) is screen pixel (u/Scale, v/Scale). The screen
// geometry is fixed, so every screenshot has this scale and action
// coordinates are mapped back with it.
func (d *Desktop) Scale() float64 {
	return fitScale(d.cfg.Width, d.cfg.Height, d.cfg.MaxWidth, d.cfg.MaxHeight)
}

// Start checks that the tools exist and starts supervising the components in
// the background; they live until Close, whatever ctx does afterwards. Use
// WaitReady to wait for them.
func (d *Desktop) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	need := []string{"Xvfb", "x11vnc", "xdotool"}
	if d.cfg.WindowManager != "none" {
		need = append(need, d.cfg.WindowManager)
	}
	var missing []string
	for _, bin := range need {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if len(missing) > 0 {
		return drydock.Errorf(drydock.EUNAVAILABLE, "desktop tools missing: %v", missing)
	}
	if err := os.MkdirAll(d.cfg.RuntimeDir, 0o700); err != nil {
		return fmt.Errorf("create desktop runtime dir: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errors.New("desktop is closed")
	}
	if d.cancel != nil {
		return nil
	}
	runCtx, cancel := context.WithCancel(context.Background())
	d.ctx, d.cancel, d.done = runCtx, cancel, make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range d.comps {
		wg.Go(func() { c.run(runCtx) })
	}
	go func() { wg.Wait(); close(d.done) }()
	return nil
}

// WaitReady waits until every component is ready.
func (d *Desktop) WaitReady(ctx context.Context) error {
	for {
		all := true
		for _, ok := range d.Ready() {
			all = all && ok
		}
		if all {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for desktop: %w (ready: %v)", ctx.Err(), d.Ready())
		case <-time.After(probeEvery):
		}
	}
}

// Ready reports, per component, whether it is up and answering.
func (d *Desktop) Ready() map[string]bool {
	r := make(map[string]bool, len(d.comps))
	for _, c := range d.comps {
		r[c.name] = c.ready.Load()
	}
	return r
}

// Restarts reports how many times each component has been restarted.
func (d *Desktop) Restarts() map[string]int64 {
	r := make(map[string]int64, len(d.comps))
	for _, c := range d.comps {
		r[c.name] = c.restarts.Load()
	}
	return r
}

// Close stops every component and every VNC bridge, and waits for them.
func (d *Desktop) Close() error {
	d.mu.Lock()
	d.closed = true
	cancel, done := d.cancel, d.done
	d.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	<-done
	d.bridges.Wait()
	// Only what the desktop put there: RuntimeDir may be shared.
	_ = os.Remove(d.fbFile())
	for _, f := range []string{"vncpasswd", "fluxbox-init", "fluxbox-overlay"} {
		_ = os.Remove(filepath.Join(d.cfg.RuntimeDir, f))
	}
	_ = os.Remove(d.cfg.RuntimeDir)
	return nil
}

func (d *Desktop) env() []string {
	env := append(os.Environ(), "DISPLAY="+d.Display())
	return append(env, d.cfg.Env...)
}

func (d *Desktop) fbFile() string { return filepath.Join(d.cfg.RuntimeDir, "Xvfb_screen0") }

func (d *Desktop) xvfbCommand() (*exec.Cmd, error) {
	// Another X server on our display would answer our probes while our
	// Xvfb keeps failing; say so instead.
	if b, err := os.ReadFile(fmt.Sprintf("/tmp/.X%d-lock", d.cfg.Display)); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
				return nil, fmt.Errorf("display %s is in use by process %d", d.Display(), pid)
			}
		}
	}
	screen := fmt.Sprintf("%dx%dx%d", d.cfg.Width, d.cfg.Height, d.cfg.Depth)
	// Without GLX: loading Mesa's software renderer costs Xvfb about 12 MiB
	// of private memory and 44 MiB of mapped libraries in every desktop
	// sandbox, and nothing the desktop runs (the window manager, x11vnc,
	// xdotool, screenshots from the framebuffer file) needs it. Programs
	// that ask for OpenGL fall back to software drawing or fail clearly.
	cmd := exec.Command("Xvfb", d.Display(), "-screen", "0", screen,
		"-nolisten", "tcp", "-fbdir", d.cfg.RuntimeDir, "-dpi", "96", "-noreset",
		"-extension", "GLX")
	cmd.Env = append(os.Environ(), d.cfg.Env...)
	return cmd, nil
}

func (d *Desktop) wmCommand() (*exec.Cmd, error) {
	var args []string
	if d.cfg.WindowManager == "fluxbox" {
		rc, err := d.fluxboxConfig()
		if err != nil {
			return nil, err
		}
		args = []string{"-rc", rc}
	}
	cmd := exec.Command(d.cfg.WindowManager, args...)
	cmd.Env = d.env()
	return cmd, nil
}

// fluxboxConfig writes a small fluxbox configuration: one workspace, a
// toolbar with the window list and a clock, and no wallpaper (fluxbox's
// Debian style would otherwise start an image viewer, and pop up an error
// window when none is installed).
func (d *Desktop) fluxboxConfig() (string, error) {
	overlay := filepath.Join(d.cfg.RuntimeDir, "fluxbox-overlay")
	rc := filepath.Join(d.cfg.RuntimeDir, "fluxbox-init")
	init := "session.configVersion: 13\n" +
		"session.styleOverlay: " + overlay + "\n" +
		"session.screen0.workspaces: 1\n" +
		"session.screen0.toolbar.tools: iconbar, clock\n" +
		"session.screen0.strftimeFormat: %H:%M\n"
	if err := os.WriteFile(overlay, []byte("background: none\n"), 0o600); err != nil {
		return "", fmt.Errorf("write fluxbox config: %w", err)
	}
	if err := os.WriteFile(rc, []byte(init), 0o600); err != nil {
		return "", fmt.Errorf("write fluxbox config: %w", err)
	}
	// On a first run (no ~/.fluxbox) fluxbox copies its default init over
	// the -rc file; an existing directory stops that.
	if home := d.home(); home != "" {
		_ = os.MkdirAll(filepath.Join(home, ".fluxbox"), 0o700)
	}
	return rc, nil
}

// home is the HOME the desktop's processes see.
func (d *Desktop) home() string {
	home := os.Getenv("HOME")
	for _, kv := range d.cfg.Env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	return home
}

func (d *Desktop) vncCommand() (*exec.Cmd, error) {
	args := []string{"-display", d.Display(), "-forever", "-shared", "-norc",
		"-noxdamage", "-noxrecord", "-nowf", "-xkb", "-noipv6", "-q"}
	if d.cfg.VNCSocket != "" {
		_ = os.Remove(d.cfg.VNCSocket)
		args = append(args, "-unixsock", d.cfg.VNCSocket, "-rfbport", "0")
	} else {
		args = append(args, "-localhost", "-rfbport", strconv.Itoa(d.cfg.VNCPort))
	}
	if pw := d.vncPassword(); pw == "" {
		args = append(args, "-nopw")
	} else {
		// Written fresh for every start and removed by x11vnc once read
		// ("rm:"), so the password sits on disk only for an instant.
		f := filepath.Join(d.cfg.RuntimeDir, "vncpasswd")
		if err := os.WriteFile(f, []byte(pw+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("write vnc password file: %w", err)
		}
		args = append(args, "-passwdfile", "rm:"+f)
	}
	cmd := exec.Command("x11vnc", args...)
	cmd.Env = d.env()
	return cmd, nil
}

func (d *Desktop) probeDisplay(ctx context.Context) error {
	x, err := dialX(ctx, d.cfg.Display)
	if err != nil {
		return err
	}
	return x.Close()
}

func (d *Desktop) probeWindowManager(ctx context.Context) error {
	x, err := dialX(ctx, d.cfg.Display)
	if err != nil {
		return err
	}
	defer x.Close()
	ok, err := x.windowManagerRunning()
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("no window manager on the screen yet")
	}
	return nil
}

func (d *Desktop) probeVNC(ctx context.Context) error {
	c, err := d.dialVNC(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	banner := make([]byte, 12)
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetReadDeadline(dl)
	}
	if _, err := io.ReadFull(c, banner); err != nil {
		return fmt.Errorf("read rfb banner: %w", err)
	}
	if string(banner[:4]) != "RFB " {
		return fmt.Errorf("unexpected vnc banner %q", banner)
	}
	return nil
}

func (d *Desktop) dialVNC(ctx context.Context) (net.Conn, error) {
	var dl net.Dialer
	if d.cfg.VNCSocket != "" {
		return dl.DialContext(ctx, "unix", d.cfg.VNCSocket)
	}
	return dl.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(d.cfg.VNCPort)))
}
