package server

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"time"

	"github.com/drydockhq/drydock"
)

// Jupyter is the Jupyter server for people watching the sandbox (package
// kernel provides it). Its errors follow the same codes as Desktop's.
type Jupyter interface {
	// Start starts the server under baseURL, or restarts it there when it
	// runs under another, and waits until it answers or ctx ends. It
	// returns the base URL as the server uses it ("/a/b/"); a malformed one
	// is EINVALID, a server that is not up (yet) EUNAVAILABLE.
	Start(ctx context.Context, baseURL string) (string, error)
	// Dial connects to the address the server listens on.
	Dial(ctx context.Context) (net.Conn, error)
	// Token is the server's own token ("Authorization: token T").
	Token() string
}

// jupyterProxyPrefix is the route prefix whose rest is the path on the
// Jupyter server.
const jupyterProxyPrefix = "/v1/jupyter/proxy"

// jupyterStartWait bounds how long a start request waits for the server.
// A cold start in a sandbox takes seconds; the orchestrator asks again
// after a 503.
const jupyterStartWait = 2 * time.Minute

// jupyterStartRequest is the body of POST /v1/jupyter/start.
type jupyterStartRequest struct {
	// BaseURL is the path prefix Jupyter serves under, the one people's
	// requests arrive with through the orchestrator's proxy; empty means
	// the daemon's default ("/").
	BaseURL string `json:"base_url"`
}

// jupyterStartReply is the answer of POST /v1/jupyter/start.
type jupyterStartReply struct {
	Ready   bool   `json:"ready"`
	BaseURL string `json:"base_url"`
}

func (s *Server) noJupyter() error {
	return drydock.Errorf(drydock.ENOTIMPLEMENTED, "this sandbox has no Jupyter server")
}

func (s *Server) handleJupyterStart(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Jupyter == nil {
		writeError(w, r, s.log, s.noJupyter())
		return
	}
	var req jupyterStartRequest
	if err := decodeJSON(w, r, &req); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), jupyterStartWait)
	defer cancel()
	base, err := s.cfg.Jupyter.Start(ctx, req.BaseURL)
	if err != nil {
		if drydock.ErrorCode(err) == drydock.EUNAVAILABLE {
			w.Header().Set("Retry-After", "2")
		}
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, jupyterStartReply{Ready: true, BaseURL: base})
}

// newJupyterProxy forwards /v1/jupyter/proxy/<path> to the Jupyter server's
// /<path>, any method, WebSocket upgrades included, streaming both ways.
// The caller's bearer token is toolboxd's and stays here: Jupyter gets its
// own. The Host header passes unchanged, because Jupyter compares a
// WebSocket's Origin with it and the browser's origin is the orchestrator's.
func newJupyterProxy(j Jupyter, s *Server) http.Handler {
	return &httputil.ReverseProxy{
		Transport: &http.Transport{
			DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return j.Dial(ctx) },
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     90 * time.Second,
		},
		// Kernel messages and file downloads go out as they come.
		FlushInterval: -1,
		Rewrite: func(pr *httputil.ProxyRequest) {
			in, out := pr.In, pr.Out
			out.URL.Scheme, out.URL.Host = "http", "jupyter"
			out.URL.Path = strings.TrimPrefix(in.URL.Path, jupyterProxyPrefix)
			out.URL.RawPath = strings.TrimPrefix(in.URL.RawPath, jupyterProxyPrefix)
			out.Host = in.Host
			out.Header.Set("Authorization", "token "+j.Token())
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return
			}
			s.log.Warn("jupyter proxy", "method", r.Method, "path", r.URL.Path, "err", err)
			writeError(w, r, s.log, drydock.Errorf(drydock.EUNAVAILABLE,
				"the Jupyter server does not answer (POST /v1/jupyter/start starts it)"))
		},
	}
}

func (s *Server) handleJupyterProxy(w http.ResponseWriter, r *http.Request) {
	if s.jupyter == nil {
		writeError(w, r, s.log, s.noJupyter())
		return
	}
	s.jupyter.ServeHTTP(w, r)
}
