package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/desktop"
	"github.com/drydockhq/drydock/kernel"
	"github.com/drydockhq/drydock/toolbox"
	"github.com/drydockhq/drydock/toolbox/server"
)

// desktopService adapts package desktop to toolbox/server.Desktop.
type desktopService struct{ d *desktop.Desktop }

func components(ready map[string]bool, msg string) []toolbox.Component {
	names := make([]string, 0, len(ready))
	for n := range ready {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]toolbox.Component, 0, len(names))
	for _, n := range names {
		c := toolbox.Component{Name: n, Ready: ready[n]}
		if !c.Ready {
			c.Message = msg
		}
		out = append(out, c)
	}
	return out
}

func (s desktopService) Components(ctx context.Context) []toolbox.Component {
	return components(s.d.Ready(), "starting or restarting")
}

func (s desktopService) Screenshot(ctx context.Context) (*toolbox.Screenshot, error) {
	shot, err := s.d.Capture(ctx)
	if err != nil {
		return nil, err
	}
	// desktop's Scale is image pixels per screen pixel; the wire type says
	// screen pixels per image pixel.
	scale := 1.0
	if shot.Scale > 0 {
		scale = 1 / shot.Scale
	}
	return &toolbox.Screenshot{
		PNG: shot.PNG, Width: shot.Width, Height: shot.Height,
		ScreenWidth: shot.ScreenWidth, ScreenHeight: shot.ScreenHeight, Scale: scale,
	}, nil
}

func point(c []int, field string) (*desktop.Point, error) {
	switch len(c) {
	case 0:
		return nil, nil
	case 2:
		return &desktop.Point{X: c[0], Y: c[1]}, nil
	}
	return nil, drydock.Errorf(drydock.EINVALID, "%s must be [x, y]", field)
}

func (s desktopService) Do(ctx context.Context, a toolbox.DesktopAction) (*toolbox.DesktopResult, error) {
	da := desktop.Action{
		Action: a.Action, Text: a.Text, ScrollDirection: a.ScrollDirection, ScrollAmount: a.ScrollAmount,
		Duration: time.Duration(a.Duration).Seconds(),
	}
	var err error
	if da.Coordinate, err = point(a.Coordinate, "coordinate"); err != nil {
		return nil, err
	}
	if da.StartCoordinate, err = point(a.StartCoordinate, "start_coordinate"); err != nil {
		return nil, err
	}
	res, err := s.d.Do(ctx, da)
	if err != nil {
		return nil, err
	}
	out := &toolbox.DesktopResult{}
	if res.Cursor != nil {
		out.Cursor = []int{res.Cursor.X, res.Cursor.Y}
	}
	return out, nil
}

func (s desktopService) ServeVNC(w http.ResponseWriter, r *http.Request) {
	s.d.VNCHandler().ServeHTTP(w, r)
}

// SetVNCPassword lets a claim give the job its own VNC password.
func (s desktopService) SetVNCPassword(pw string) error { return s.d.SetVNCPassword(pw) }

// codeService adapts package kernel to toolbox/server.CodeRunner.
type codeService struct{ k *kernel.Kernel }

func (s codeService) Components(ctx context.Context) []toolbox.Component {
	return components(s.k.Ready(), "starting or restarting")
}

func (s codeService) Run(ctx context.Context, req toolbox.CodeRequest) (*toolbox.CodeResult, error) {
	switch req.Language {
	case kernel.Python, kernel.JavaScript, kernel.TypeScript:
	default:
		return nil, drydock.Errorf(drydock.EINVALID, "language must be python, javascript or typescript")
	}
	res, err := s.k.Execute(ctx, req.Language, req.Code, time.Duration(req.Timeout))
	if err != nil {
		return nil, err
	}
	out := &toolbox.CodeResult{TimedOut: res.TimedOut, Duration: drydock.Duration(res.Duration), Error: res.Error != nil}
	for _, o := range res.Outputs {
		switch o.Kind {
		case kernel.OutputStream:
			out.Outputs = append(out.Outputs, toolbox.CodeOutput{Kind: toolbox.OutputStream, Name: o.Name, Text: o.Text})
		default: // result, display
			if o.Text != "" {
				out.Outputs = append(out.Outputs, toolbox.CodeOutput{Kind: toolbox.OutputResult, Text: o.Text})
			}
			for _, img := range o.Images {
				out.Outputs = append(out.Outputs, toolbox.CodeOutput{Kind: toolbox.OutputImage, MimeType: img.MIME, Data: img.Data})
			}
		}
	}
	if e := res.Error; e != nil {
		text := e.Traceback
		if text == "" {
			text = e.Name + ": " + e.Value
		}
		out.Outputs = append(out.Outputs, toolbox.CodeOutput{Kind: toolbox.OutputError, Name: e.Name, Text: text})
	}
	if res.Restarted {
		out.Outputs = append(out.Outputs, toolbox.CodeOutput{Kind: toolbox.OutputStream, Name: "stderr",
			Text: "\n[the Python kernel was restarted; its variables were lost]\n"})
	}
	return out, nil
}

// SetEnv gives the code the job's variables (toolbox/server.EnvSetter; the
// server calls it only when they change). The Python kernel started at
// boot, before they were known, is restarted so that it has them; node and
// a later Jupyter server get them at start.
func (s codeService) SetEnv(ctx context.Context, env []string) (bool, error) {
	s.k.SetEnv(env)
	err := s.k.Restart(ctx)
	if drydock.ErrorCode(err) == drydock.EUNAVAILABLE {
		// The kernel never started (Python is missing): whenever it
		// does, it starts with the new variables.
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("restart the python kernel with the job's environment: %w", err)
	}
	return true, nil
}

var _ server.EnvSetter = codeService{}

// jupyterService adapts the kernel's Jupyter server to
// toolbox/server.Jupyter.
type jupyterService struct{ k *kernel.Kernel }

func (s jupyterService) Start(ctx context.Context, baseURL string) (string, error) {
	u, err := s.k.StartServer(ctx, baseURL)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(u, "http://localhost"), nil
}

func (s jupyterService) Dial(ctx context.Context) (net.Conn, error) { return s.k.DialServer(ctx) }

func (s jupyterService) Token() string { return s.k.ServerToken() }

// started is what services started, and the variables every process
// toolboxd starts must have to use it (DISPLAY on the desktop profile).
type started struct {
	desktop *desktop.Desktop
	kernel  *kernel.Kernel
	env     map[string]string
}

// services starts what the profile offers: code execution always, the
// desktop for the desktop profile. Both supervise their processes in the
// background, so the shell and files are usable at once and readiness
// reports the rest as it comes up. display is the X display number; 0 is
// the default (:1).
func services(ctx context.Context, profile drydock.Profile, workspace, runtimeDir, vncPassword string, display int, log *slog.Logger) started {
	_ = os.MkdirAll(runtimeDir, 0o700)
	home, _ := os.UserHomeDir()
	env := []string{"HOME=" + home}
	var d *desktop.Desktop
	procEnv := map[string]string{}
	if profile == drydock.ProfileDesktop {
		d = desktop.New(desktop.Config{
			Display:     display,
			VNCPassword: vncPassword,
			VNCSocket:   filepath.Join(runtimeDir, "vnc.sock"),
			RuntimeDir:  filepath.Join(runtimeDir, "desktop"),
			Env:         env,
		}, log)
		// Set whether or not the display is up yet: a program started
		// early retries or fails like on any desktop, and one started
		// later finds it. Shells and commands get it through the server,
		// the kernel and node here.
		procEnv["DISPLAY"] = d.Display()
		env = append(env, "DISPLAY="+d.Display())
		if err := d.Start(ctx); err != nil {
			log.Error("desktop did not start", "err", err)
		}
	}
	k := kernel.New(kernel.Config{
		Dir:        workspace,
		RuntimeDir: filepath.Join(runtimeDir, "kernel"),
		Env:        env,
		// A socket, not a port that code in the sandbox may want; named
		// by pid so that two daemons on one host (tests) keep apart.
		Server: kernel.ServerConfig{Socket: filepath.Join(runtimeDir, "kernel", fmt.Sprintf("jupyter-%d.sock", os.Getpid()))},
	}, log)
	if err := k.Start(ctx); err != nil {
		log.Error("code kernel did not start", "err", err)
	}
	return started{desktop: d, kernel: k, env: procEnv}
}
