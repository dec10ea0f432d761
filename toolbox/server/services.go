package server

import (
	"context"
	"net/http"
	"os/exec"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
)

// Desktop is the display stack of the desktop profile: Xvfb, a window
// manager, x11vnc, xdotool and screenshots (package desktop provides it).
// Its methods return *drydock.Error values with EUNAVAILABLE while a part is
// not up yet, and EINVALID for a malformed action.
type Desktop interface {
	// Components reports the readiness of each part (e.g. "display", "vnc").
	Components(ctx context.Context) []toolbox.Component
	// Screenshot returns the screen as a PNG scaled to fit 1280x800.
	Screenshot(ctx context.Context) (*toolbox.Screenshot, error)
	// Do performs one computer-tool action.
	Do(ctx context.Context, a toolbox.DesktopAction) (*toolbox.DesktopResult, error)
	// ServeVNC upgrades the request to a WebSocket and bridges it to the VNC
	// server (RFB over WebSocket, as noVNC speaks it). The caller is already
	// authenticated.
	ServeVNC(w http.ResponseWriter, r *http.Request)
}

// CodeRunner runs code: python in a persistent kernel, javascript and
// typescript with node (package kernel provides it). Its errors follow the
// same codes as Desktop's; code that raises is a result with Error set, not
// an error.
type CodeRunner interface {
	// Components reports the readiness of each part (e.g. "kernel", "node").
	Components(ctx context.Context) []toolbox.Component
	Run(ctx context.Context, req toolbox.CodeRequest) (*toolbox.CodeResult, error)
}

func (s *Server) noDesktop() error {
	return drydock.Errorf(drydock.ENOTIMPLEMENTED, "this sandbox has no desktop (profile %s); create it with the desktop profile", s.cfg.Profile)
}

func (s *Server) handleScreenshot(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Desktop == nil {
		writeError(w, r, s.log, s.noDesktop())
		return
	}
	shot, err := s.cfg.Desktop.Screenshot(r.Context())
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, shot)
}

func (s *Server) handleDesktopAction(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Desktop == nil {
		writeError(w, r, s.log, s.noDesktop())
		return
	}
	var a toolbox.DesktopAction
	if err := decodeJSON(w, r, &a); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if a.Action == "" {
		writeError(w, r, s.log, drydock.Errorf(drydock.EINVALID, "action is required"))
		return
	}
	res, err := s.cfg.Desktop.Do(r.Context(), a)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) handleVNC(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Desktop == nil {
		writeError(w, r, s.log, s.noDesktop())
		return
	}
	s.cfg.Desktop.ServeVNC(w, r)
}

func (s *Server) handleCodeRun(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Code == nil {
		writeError(w, r, s.log, drydock.Errorf(drydock.ENOTIMPLEMENTED, "this sandbox has no code runner (no Jupyter kernel or node)"))
		return
	}
	var req toolbox.CodeRequest
	if err := decodeJSON(w, r, &req); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	switch req.Language {
	case toolbox.LangPython, toolbox.LangJavaScript, toolbox.LangTypeScript:
	default:
		writeError(w, r, s.log, drydock.Errorf(drydock.EINVALID, "language must be %s, %s or %s",
			toolbox.LangPython, toolbox.LangJavaScript, toolbox.LangTypeScript))
		return
	}
	before := s.mem.sample()
	res, err := s.cfg.Code.Run(r.Context(), req)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	// The Python kernel or node killed for memory is otherwise only "the
	// kernel died" or an exit status.
	res.OutOfMemory = s.mem.since(before, s.mem.sample())
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, toolbox.Health{Status: "ok"})
}

// handleReady answers 200 once the core (files, shell) works and 503 before,
// listing every component either way.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	res := s.readiness(ctx)
	status := http.StatusOK
	if !res.Ready {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, res)
}

func (s *Server) readiness(ctx context.Context) toolbox.Readiness {
	files := toolbox.Component{Name: toolbox.ComponentFiles, Ready: true}
	if root, err := s.ws.open(); err != nil {
		files.Ready, files.Message = false, drydock.ErrorMessage(err)
	} else if _, err := root.Stat("."); err != nil {
		files.Ready, files.Message = false, "workspace is not accessible: "+errText(err)
	}
	shell := toolbox.Component{Name: toolbox.ComponentShell, Ready: true}
	if _, err := exec.LookPath(s.cfg.Shell); err != nil {
		shell.Ready, shell.Message = false, s.cfg.Shell+" is not installed"
	}
	res := toolbox.Readiness{Components: []toolbox.Component{files, shell}}
	res.Ready = files.Ready && shell.Ready
	if s.cfg.Desktop != nil {
		res.Components = append(res.Components, s.cfg.Desktop.Components(ctx)...)
	}
	if s.cfg.Code != nil {
		res.Components = append(res.Components, s.cfg.Code.Components(ctx)...)
	}
	return res
}

func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, toolbox.Info{
		APIVersion: toolbox.APIVersion,
		Version:    s.cfg.Version,
		Profile:    s.cfg.Profile,
		Workspace:  s.cfg.Workspace,
		Desktop:    s.cfg.Desktop != nil,
		Code:       s.cfg.Code != nil,
	})
}
