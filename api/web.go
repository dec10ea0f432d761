package api

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
	"github.com/drydockhq/drydock/web"
	"github.com/prometheus/client_golang/prometheus"
)

// Live views let a browser watch (and, for the owner, steer) a running job:
// its desktop through noVNC and its Jupyter server. Browsers cannot put an
// Authorization header on a WebSocket or a page load, so the API hands out
// short-lived links signed with a server key instead; the API token itself
// never travels in a URL.

// Scopes of a signed link, and of the cookie a Jupyter link leaves. The
// cookie's own scope keeps it from being used as a link, which would trade
// it for a fresh cookie.
const (
	scopeDesktop        = "desktop"
	scopeJupyter        = "jupyter"
	scopeJupyterSession = "jupyter-session"
)

const (
	// DefaultLinkTTL is how long a signed link can be used to open a live
	// view. An open desktop connection outlives it; a new one needs a new
	// link.
	DefaultLinkTTL = 5 * time.Minute
	// jupyterSessionTTL bounds the cookie a Jupyter link leaves behind, since
	// Jupyter's own pages make requests that cannot carry the link. It
	// counts from when the link was made, however often the link is used.
	jupyterSessionTTL = 8 * time.Hour
	jupyterCookie     = "drydock_jupyter"
	linkParam         = "t"
)

// live is the state of the live views.
type live struct {
	key     []byte
	conns   *prometheus.GaugeVec
	mu      sync.Mutex
	jupyter map[string]*jupyterStart // by sandbox id
}

// initLive loads the link key and registers the live views' metrics.
func (s *Server) initLive(reg prometheus.Registerer) {
	s.live = &live{
		jupyter: map[string]*jupyterStart{},
		conns: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "drydock_live_connections", Help: "Open live-view connections through the server, by kind (desktop, jupyter).",
		}, []string{"kind"}),
	}
	reg.MustRegister(s.live.conns)
	if s.cfg.LinkKeyFile != "" {
		key, err := LoadLinkKey(s.cfg.LinkKeyFile)
		if err == nil {
			s.live.key = key
			return
		}
		s.log.Error("cannot use the link key file; signed links will not survive a restart", "path", s.cfg.LinkKeyFile, "err", err)
	}
	s.live.key = make([]byte, 32)
	_, _ = rand.Read(s.live.key)
}

func (s *Server) liveRoutes() {
	authed := func(h http.HandlerFunc) http.Handler { return s.authenticate(h) }
	page := func(w http.ResponseWriter, r *http.Request) { web.ServePage(w, r, web.IndexPage, s.liveOrigin()) }
	s.handle("GET /{$}", http.HandlerFunc(page))
	s.handle("GET /jobs/{id}", http.HandlerFunc(page))
	s.handle("GET /evals/{run}", http.HandlerFunc(page)) // a drydock eval run's page
	s.handle("GET /ui/{path...}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		web.ServeAsset(w, r, r.PathValue("path"))
	}))
	s.handle("GET /v1/jobs/{id}/files/{path...}", authed(s.handleFiles))
	s.handle("POST /v1/jobs/{id}/desktop/link", authed(s.handleLink(scopeDesktop)))
	s.handle("POST /v1/jobs/{id}/jupyter/link", authed(s.handleLink(scopeJupyter)))
	s.handle("GET /jobs/{id}/desktop", s.liveAuth(scopeDesktop, s.handleDesktopPage))
	s.handle("GET /jobs/{id}/desktop/websockify", s.liveAuth(scopeDesktop, s.handleDesktopProxy))
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		// Jupyter's own pages send what bodies they like; they reach the
		// sandbox's server unchecked (guard's Origin check still applies).
		s.handleBodies(m+" /jobs/{id}/jupyter/{path...}", nil, s.liveAuth(scopeJupyter, s.handleJupyter))
	}
}

// LoadLinkKey reads the key that signs live-view links from path, creating
// it (mode 0600) with 256 random bits the first time. Keeping it in the data
// directory lets links survive a restart.
func LoadLinkKey(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := createLinkKey(path); err != nil {
			return nil, err
		}
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read link key: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) < 32 {
		return nil, fmt.Errorf("link key %s is malformed (want 64 hex digits); remove it to make a new one", path)
	}
	return key, nil
}

func createLinkKey(path string) error {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".link-key-*")
	if err != nil {
		return fmt.Errorf("create link key: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(hex.EncodeToString(key) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write link key: %w", err)
	}
	// A link never replaces a file, so of two first starts at once the
	// key that landed first wins and both read it back.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("install link key: %w", err)
	}
	return nil
}

// linkClaims is what a signed link grants: one scope of one job, until
// Expires, view-only unless Control. Principal is who asked for it (a token
// id, or "local" in development mode): every use checks that it is still
// valid and may still see the job, so revoking a token kills its links and
// the Jupyter cookies made from them. Issued is when the link was made; a
// Jupyter cookie made from it lasts jupyterSessionTTL from then.
type linkClaims struct {
	Job       string `json:"j"`
	Scope     string `json:"s"`
	Control   bool   `json:"c,omitempty"`
	Expires   int64  `json:"e"`
	Principal string `json:"p"`
	Issued    int64  `json:"i"`
}

func (s *Server) linkMAC(payload string) []byte {
	m := hmac.New(sha256.New, s.live.key)
	m.Write([]byte("drydock-link-v1\x00"))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// signLink encodes c as base64url(JSON) "." base64url(HMAC). The payload is
// readable on purpose: the desktop page learns from it whether it may send
// input, and nothing in it is secret.
func (s *Server) signLink(c linkClaims) string {
	b, _ := json.Marshal(c)
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + base64.RawURLEncoding.EncodeToString(s.linkMAC(payload))
}

var errBadLink = drydock.Errorf(drydock.EUNAUTHORIZED, "this link is invalid or has expired; open the job in the web UI (or ask its API for a new link) and try again")

func (s *Server) verifyLink(tok, job, scope string) (*linkClaims, error) {
	payload, sig, ok := strings.Cut(tok, ".")
	if !ok {
		return nil, errBadLink
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.linkMAC(payload)) {
		return nil, errBadLink
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return nil, errBadLink
	}
	var c linkClaims
	// A link without a principal predates revocation checks: nobody can
	// tell whether its token still stands, so it is refused.
	if err := json.Unmarshal(b, &c); err != nil || c.Job != job || c.Scope != scope || time.Now().Unix() >= c.Expires ||
		c.Principal == "" || c.Issued <= 0 {
		return nil, errBadLink
	}
	return &c, nil
}

var errRevokedLink = drydock.Errorf(drydock.EUNAUTHORIZED, "the token this link was made for has been revoked (or development mode has ended); ask for a new link with a valid token")

// admitLink checks that the principal a link or cookie was made for is
// still valid and may still see the job, and returns what it may do.
func (s *Server) admitLink(ctx context.Context, c *linkClaims) (*liveAccess, error) {
	p, err := s.principalValid(ctx, c.Principal)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errRevokedLink
	}
	job, err := s.store.GetJob(ctx, c.Job)
	if drydock.ErrorCode(err) == drydock.ENOTFOUND {
		return nil, errBadLink
	}
	if err != nil {
		return nil, err
	}
	if !visible(*p, job) {
		return nil, errBadLink
	}
	return &liveAccess{job: job, control: c.Control, who: *p}, nil
}

// Link is the answer of POST /v1/jobs/{id}/desktop/link and .../jupyter/link.
type Link struct {
	URL string `json:"url"`
	// WebSocketURL is the desktop's RFB-over-WebSocket endpoint, for noVNC
	// or any other client.
	WebSocketURL string    `json:"websocket_url,omitempty"`
	Control      bool      `json:"control"`
	ExpiresAt    time.Time `json:"expires_at"`
}

type linkRequest struct {
	Control bool `json:"control"`
}

var linkBody = bodyHelp{fields: "control", example: `{"control": true}`}

func (s *Server) handleLink(scope string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req linkRequest
		if r.ContentLength != 0 {
			if err := s.decodeJSON(w, r, &req, linkBody); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		job, err := s.lookup(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if scope == scopeDesktop && job.Profile != drydock.ProfileDesktop {
			s.writeError(w, r, drydock.Errorf(drydock.ECONFLICT, "job %s runs the %s profile, which has no desktop", job.ID, job.Profile))
			return
		}
		if err := s.canReachSandbox(job); err != nil {
			s.writeError(w, r, err)
			return
		}
		if req.Control && scope == scopeDesktop {
			// Said now rather than only when the link is used, so that the
			// page can show who has control instead of a failed connection.
			if err := controlTaken(job, time.Now()); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		ttl := s.cfg.LinkTTL
		if ttl <= 0 {
			ttl = DefaultLinkTTL
		}
		now := time.Now()
		exp := now.Add(ttl).Truncate(time.Second)
		c := linkClaims{Job: job.ID, Scope: scope, Control: req.Control && scope == scopeDesktop, Expires: exp.Unix(),
			Principal: principalFrom(r.Context()).ID, Issued: now.Unix()}
		tok := url.QueryEscape(s.signLink(c))
		base := s.liveBase(r) + "/jobs/" + url.PathEscape(job.ID)
		link := Link{Control: c.Control, ExpiresAt: exp.UTC()}
		switch scope {
		case scopeDesktop:
			link.URL = base + "/desktop?" + linkParam + "=" + tok
			link.WebSocketURL = wsURL(base) + "/desktop/websockify?" + linkParam + "=" + tok
		case scopeJupyter:
			link.URL = base + "/jupyter/?" + linkParam + "=" + tok
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, link)
	}
}

func wsURL(httpURL string) string {
	if rest, ok := strings.CutPrefix(httpURL, "https://"); ok {
		return "wss://" + rest
	}
	return "ws://" + strings.TrimPrefix(httpURL, "http://")
}

// liveBase is where live views are served: Config.LiveURL when set (a
// separate origin keeps what the sandbox serves away from the UI's
// storage), else the API's own base.
func (s *Server) liveBase(r *http.Request) string {
	if s.cfg.LiveURL != "" {
		return strings.TrimRight(s.cfg.LiveURL, "/")
	}
	return s.baseURL(r)
}

// liveOrigin is the extra origin the UI's pages connect to, if any.
func (s *Server) liveOrigin() string {
	if s.cfg.LiveURL == "" {
		return ""
	}
	u, err := url.Parse(s.cfg.LiveURL)
	if err != nil || u.Host == "" {
		return ""
	}
	return wsURL(u.Scheme+"://"+u.Host) + " " + u.Scheme + "://" + u.Host
}

// liveAccess is who opened a live view and what they may do. who is the
// bearer of the token, or the principal a link was made for: the view
// closes when it is revoked.
type liveAccess struct {
	job     *drydock.Job
	control bool
	who     Principal
}

type liveHandler func(w http.ResponseWriter, r *http.Request, a *liveAccess)

// liveAuth admits a request to a job's live view by a signed link (the t
// query parameter; for Jupyter also the cookie a link left), or like the API
// by a bearer token of the job's owner or an admin (or development mode).
// A bearer caller gets control with ?control=1; a link carries its mode.
func (s *Server) liveAuth(scope string, next liveHandler) http.Handler {
	viaToken := s.authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		job, err := s.lookup(r)
		if err != nil {
			s.liveError(w, r, err)
			return
		}
		next(w, r, &liveAccess{job: job, control: r.URL.Query().Get("control") == "1", who: principalFrom(r.Context())})
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		tok := r.URL.Query().Get(linkParam)
		var refused error = drydock.Errorf(drydock.EUNAUTHORIZED, "open this from the job's page in the web UI: it needs a signed link (POST /v1/jobs/%s/%s/link) or an API token", id, scope)
		if tok == "" && scope == scopeJupyter && r.Header.Get("Authorization") == "" {
			// Jupyter's own requests carry the session cookie; a stale one
			// falls through to the token check (development mode passes).
			if ck, err := r.Cookie(jupyterCookie); err == nil {
				if c, err := s.verifyLink(ck.Value, id, scopeJupyterSession); err == nil {
					a, err := s.admitLink(r.Context(), c)
					switch {
					case err == nil:
						next(w, r, a)
						return
					case drydock.ErrorCode(err) != drydock.EUNAUTHORIZED:
						s.liveError(w, r, err)
						return
					}
					refused = err
				}
			}
		}
		if tok == "" {
			dev, err := s.devMode(r.Context())
			if err != nil {
				s.liveError(w, r, err)
				return
			}
			if r.Header.Get("Authorization") == "" && !dev {
				// What authenticate would answer, but as a page a person
				// can read when it is one.
				w.Header().Set("WWW-Authenticate", `Bearer realm="drydock"`)
				s.liveError(w, r, refused)
				return
			}
			viaToken.ServeHTTP(w, r)
			return
		}
		c, err := s.verifyLink(tok, id, scope)
		if err != nil {
			s.liveError(w, r, err)
			return
		}
		a, err := s.admitLink(r.Context(), c)
		if err != nil {
			s.liveError(w, r, err)
			return
		}
		if scope == scopeJupyter {
			s.startJupyterSession(w, r, c)
			return
		}
		next(w, r, a)
	})
}

// liveError answers a page load with a short HTML page and anything else
// with the API's JSON error.
func (s *Server) liveError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Method != http.MethodGet || !strings.Contains(r.Header.Get("Accept"), "text/html") || r.Header.Get("Upgrade") != "" {
		s.writeError(w, r, err)
		return
	}
	code := drydock.ErrorCode(err)
	status := drydock.HTTPStatus(code)
	if status >= 500 {
		s.log.Error("live view failed", "path", r.URL.Path, "err", err)
	}
	msg := drydock.ErrorMessage(err)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	h.Set("Cache-Control", "no-store")
	// Unavailable is passing (a sandbox starting or restarting): the page
	// tries again by itself rather than leave the person on an error.
	refresh := ""
	if status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "5")
		refresh = `<meta http-equiv="refresh" content="5">`
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, `<!doctype html><html lang="en"><meta charset="utf-8">`+refresh+`<title>Drydock: %s</title>`+
		`<body style="font:16px system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em">`+
		`<h1>%s</h1><p>%s</p><p><a href="/">Drydock jobs</a></p></body></html>`,
		html.EscapeString(http.StatusText(status)), html.EscapeString(http.StatusText(status)), html.EscapeString(msg))
}

// startJupyterSession trades a Jupyter link for an HttpOnly cookie scoped to
// the job's Jupyter path, then sends the browser to the same URL without the
// link, so that the link is not kept in history nor sent to the sandbox.
// The cookie is made for the link's principal and ends jupyterSessionTTL
// after the link was made; its own scope keeps it from being traded again.
func (s *Server) startJupyterSession(w http.ResponseWriter, r *http.Request, c *linkClaims) {
	sess := linkClaims{Job: c.Job, Scope: scopeJupyterSession, Principal: c.Principal, Issued: c.Issued,
		Expires: c.Issued + int64(jupyterSessionTTL/time.Second)}
	http.SetCookie(w, &http.Cookie{
		Name:     jupyterCookie,
		Value:    s.signLink(sess),
		Path:     "/jobs/" + c.Job + "/jupyter/",
		MaxAge:   max(1, int(time.Until(time.Unix(sess.Expires, 0))/time.Second)),
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
	q := r.URL.Query()
	q.Del(linkParam)
	u := *r.URL
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	status := http.StatusSeeOther
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		status = http.StatusTemporaryRedirect
	}
	http.Redirect(w, r, u.RequestURI(), status)
}

func (s *Server) handleDesktopPage(w http.ResponseWriter, r *http.Request, a *liveAccess) {
	if a.job.Profile != drydock.ProfileDesktop {
		s.liveError(w, r, drydock.Errorf(drydock.ECONFLICT, "job %s runs the %s profile, which has no desktop", a.job.ID, a.job.Profile))
		return
	}
	web.ServePage(w, r, web.DesktopPage)
}

// canReachSandbox says why a job's sandbox cannot be reached, if it cannot.
func (s *Server) canReachSandbox(job *drydock.Job) error {
	switch {
	case s.cfg.Sandboxes == nil:
		return drydock.Errorf(drydock.ENOTIMPLEMENTED, "this server was started without access to its sandboxes, so live views are off")
	case job.Status == drydock.StatusPending:
		return drydock.Errorf(drydock.ECONFLICT, "job %s has not started yet; live views open once it runs", job.ID)
	case job.Status.Terminal():
		return drydock.Errorf(drydock.ECONFLICT, "job %s has ended (%s); its sandbox is gone", job.ID, job.Status)
	case job.SandboxID == "":
		return drydock.Errorf(drydock.EUNAVAILABLE, "job %s is still creating its sandbox; try again in a moment", job.ID)
	}
	return nil
}

// sandboxOf finds the running sandbox of a job.
func (s *Server) sandboxOf(ctx context.Context, job *drydock.Job) (*drydock.Sandbox, error) {
	if err := s.canReachSandbox(job); err != nil {
		return nil, err
	}
	sb, err := s.cfg.Sandboxes(ctx, job.SandboxID)
	if drydock.ErrorCode(err) == drydock.ENOTFOUND {
		return nil, drydock.Errorf(drydock.ECONFLICT, "the sandbox of job %s is gone", job.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("find sandbox %s of job %s: %w", job.SandboxID, job.ID, err)
	}
	if sb.State != "" && sb.State != drydock.SandboxRunning {
		return nil, drydock.Errorf(drydock.EUNAVAILABLE, "the sandbox of job %s is %s", job.ID, sb.State)
	}
	return sb, nil
}

// toolboxFor returns a client of the sandbox's toolboxd, reusing its
// connection pool across requests.
func (s *Server) toolboxFor(sb *drydock.Sandbox) *toolbox.Client {
	return s.cfg.Toolbox.Get(sb)
}

var (
	errJobEnded = errors.New("the job has ended")
	errShutdown = errors.New("the server is shutting down")
)

// untilJobEnds returns a context that ends with parent, when the job reaches
// a terminal status (cause errJobEnded) or when the server shuts down
// (errShutdown), so that live connections close with a reason.
func (s *Server) untilJobEnds(parent context.Context, id string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		poll := time.NewTicker(max(s.cfg.SSEPoll, 100*time.Millisecond) * 4)
		defer poll.Stop()
		for {
			changed, release := s.store.Changed(id)
			job, err := s.store.GetJob(ctx, id)
			switch {
			case err == nil && job.Status.Terminal():
				release()
				cancel(errJobEnded)
				return
			case drydock.ErrorCode(err) == drydock.ENOTFOUND:
				release()
				cancel(errJobEnded)
				return
			case err != nil && ctx.Err() == nil:
				s.log.Debug("live view: read job", "job_id", id, "err", err)
			}
			select {
			case <-ctx.Done():
				release()
				return
			case <-s.closing:
				release()
				cancel(errShutdown)
				return
			case <-changed:
			case <-poll.C:
			}
			release()
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// liveLifetime is how long an open live view lasts: until its job ends, the
// server shuts down (untilJobEnds), or the principal that opened it is
// revoked (cause errRevoked).
func (s *Server) liveLifetime(parent context.Context, a *liveAccess) (context.Context, context.CancelFunc) {
	jobCtx, stopJob := s.untilJobEnds(parent, a.job.ID)
	ctx, stopGrant := s.revoked.whileValid(jobCtx, a.who)
	return ctx, func() { stopGrant(); stopJob() }
}

func (s *Server) logLive(kind string, a *liveAccess) *slog.Logger {
	return s.log.With("live", kind, "job_id", a.job.ID, "control", a.control)
}
