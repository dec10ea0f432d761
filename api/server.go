package api

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/secretbox"
	"github.com/drydockhq/drydock/toolbox/hostclient"
	"github.com/drydockhq/drydock/watch"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Queue is what the API needs from the job runner.
type Queue interface {
	Notify()          // a job was created
	Cancel(id string) // stop a job running in this process now
}

// Config holds the server's settings.
type Config struct {
	// DevMode allows development mode: while the store holds no unrevoked
	// token, requests without a token act as the local admin. It is decided
	// per request, so the first token created ends it at once and revoking
	// the last one reopens it. The caller sets DevMode only for a server
	// that listens on loopback alone. Such a server also answers only
	// requests for loopback names and addresses (and the hosts of PublicURL
	// and LiveURL), so that a web page cannot reach it by DNS rebinding.
	DevMode bool
	// PublicURL is the base of links in answers; "" derives it from the
	// request's Host once the boundary accepted it (guard). On a DevMode
	// server its host is served besides loopback names.
	PublicURL string
	// MaxBodyBytes bounds request bodies (default 1 MiB).
	MaxBodyBytes int64
	// Upload bounds the workspace archive a job can be created with
	// (multipart creation; zero fields take the defaults).
	Upload UploadLimits
	// UploadDir holds uploads while they are checked ("" is the system's
	// temporary directory, which may be memory); files a crash left there
	// are removed at start.
	UploadDir string
	// MaxUploads bounds the uploads received at once (default
	// DefaultMaxUploads); more are refused with 429.
	MaxUploads int
	// SSEPoll is how often event streams look for events written by other
	// replicas (default 500ms); local writes wake streams at once.
	SSEPoll time.Duration
	// SSEPing is the keep-alive comment interval (default 15s).
	SSEPing time.Duration
	// MaxStreamsPerUser and MaxStreams bound the event streams and
	// live-view WebSockets open at once, per token and in total (defaults
	// DefaultMaxStreamsPerUser, DefaultMaxStreams); more are refused with
	// 429.
	MaxStreamsPerUser int
	MaxStreams        int
	// RevocationCheck is how often open event streams and live views check
	// that the token that opened them (or development mode) is still valid
	// (default DefaultRevocationCheck); a revoked one's are closed.
	RevocationCheck time.Duration

	// Sandboxes finds a sandbox by id with its toolboxd endpoint and token
	// (Runtime.Get). It enables the live views: a running job's workspace,
	// desktop and Jupyter. Nil turns them off (finished jobs' files are
	// still served from their archives).
	Sandboxes func(ctx context.Context, id string) (*drydock.Sandbox, error)
	// Toolbox holds the clients of sandboxes' toolboxd, shared with the
	// runner so that one connection pool serves a sandbox; nil means a pool
	// of the server's own.
	Toolbox *hostclient.Clients
	// LinkKeyFile keeps the key that signs live-view links (created on
	// first use), so that links survive a restart; "" keeps a random key
	// in memory.
	LinkKeyFile string
	// LinkTTL is how long a live-view link can be used to open a view
	// (default DefaultLinkTTL); an open view lasts until the job ends.
	LinkTTL time.Duration
	// ControlTTL is how long a desktop's control lease lasts without a
	// renewal (default DefaultControlTTL); the proxy renews it every third.
	ControlTTL time.Duration
	// LiveURL is the base URL of live-view links when they should be
	// served from another origin than PublicURL (same server, another
	// host name), which keeps pages served by a sandbox away from the web
	// UI's stored token. "" uses the API's own base. On a DevMode server
	// its host is served besides loopback names.
	LiveURL string
	// EgressChanged, when set, hears of every change of a job's egress
	// list once it is stored (the egress proxy drops its cached copy and
	// closes tunnels the list no longer allows).
	EgressChanged func(ctx context.Context, job *drydock.Job)
	// Egress is the operator's egress policy: the list of jobs that give
	// none, and the ceiling every job's list must stay within (at creation
	// and on every change).
	Egress drydock.EgressPolicy
	// Secrets seals the secrets of new jobs for the store and opens them
	// to mask a running job's files; its MAC key also makes the request
	// fingerprints of idempotency keys. Nil refuses jobs with secrets.
	Secrets *secretbox.Box
	// IdempotencyTTL is how long an Idempotency-Key of POST /v1/jobs
	// holds (default drydock.DefaultIdempotencyTTL).
	IdempotencyTTL time.Duration
	// Isolation is what the server's new sandboxes run under
	// (drydock.IsolationGVisor, ...), and IsolationWarning why it is not
	// gVisor when gVisor was wanted but missing (--isolation auto); both
	// are shown by /readyz.
	Isolation, IsolationWarning string
	// FollowUpSecrets is how long after it ended a job's kept secrets may
	// be inherited by a follow-up (the runner keeps and erases them); 0:
	// never.
	FollowUpSecrets time.Duration
	// Version is the server's version, as MCP clients are told it.
	Version string
}

// Server is the HTTP API.
type Server struct {
	cfg       Config
	store     *watch.Store
	queue     Queue
	artifacts drydock.ArtifactStore
	log       *slog.Logger
	mux       *http.ServeMux
	handler   http.Handler
	gatherer  prometheus.Gatherer
	reqs      *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	routes    []route
	live      *live
	streams   *streamLimit
	revoked   *revocations
	closing   chan struct{}
	closeOnce sync.Once
	uploads   chan struct{} // slots of uploads in progress
}

type route struct{ method, pattern string }

// New builds the server. reg receives the HTTP metrics and is served at
// /metrics together with whatever else was registered in it.
func New(cfg Config, store *watch.Store, queue Queue, artifacts drydock.ArtifactStore, reg *prometheus.Registry, logger *slog.Logger) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.SSEPoll <= 0 {
		cfg.SSEPoll = 500 * time.Millisecond
	}
	if cfg.SSEPing <= 0 {
		cfg.SSEPing = 15 * time.Second
	}
	if cfg.Toolbox == nil {
		cfg.Toolbox = hostclient.NewClients()
	}
	if cfg.MaxUploads <= 0 {
		cfg.MaxUploads = DefaultMaxUploads
	}
	if cfg.IdempotencyTTL <= 0 {
		cfg.IdempotencyTTL = drydock.DefaultIdempotencyTTL
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg: cfg, store: store, queue: queue, artifacts: artifacts,
		log: logger.With("component", "api"), mux: http.NewServeMux(), gatherer: reg,
		reqs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drydock_http_requests_total", Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "drydock_http_request_duration_seconds", Help: "HTTP request latency by route pattern (streams excluded).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route"}),
	}
	s.closing = make(chan struct{})
	s.uploads = make(chan struct{}, cfg.MaxUploads)
	removeStaleUploads(cfg.UploadDir, s.log)
	s.streams = newStreamLimit(cfg.MaxStreamsPerUser, cfg.MaxStreams)
	s.revoked = newRevocations(s, cfg.RevocationCheck)
	reg.MustRegister(s.reqs, s.latency)
	s.initLive(reg)
	s.routesSetup()
	s.handler = s.instrument(s.mux)
	return s
}

func (s *Server) routesSetup() {
	authed := func(h http.HandlerFunc) http.Handler { return s.authenticate(h) }
	// Job creation also takes multipart/form-data: a spec and a workspace
	// archive (upload.go).
	uploads := []string{mediaJSON, mediaMultipart}
	s.handleBodies("POST /schedule", uploads, authed(s.handleCreate))
	s.handleBodies("POST /submit", uploads, authed(s.handleCreate))
	s.handle("GET /status/{id}", authed(s.handleGet))
	s.handleBodies("POST /v1/jobs", uploads, authed(s.handleCreate))
	s.handle("GET /v1/jobs", authed(s.handleList))
	s.handle("GET /v1/jobs/{id}", authed(s.handleGet))
	s.handle("POST /v1/jobs/{id}/cancel", authed(s.handleCancel))
	s.handle("PUT /v1/jobs/{id}/egress", authed(s.handleSetEgress))
	s.handle("POST /v1/jobs/{id}/pause", authed(s.handlePause))
	s.handle("POST /v1/jobs/{id}/resume", authed(s.handleResume))
	s.handle("GET /v1/jobs/{id}/events", authed(s.handleEvents))
	s.handle("GET /v1/jobs/{id}/trajectory", authed(s.handleTrajectory))
	s.handle("GET /v1/jobs/{id}/artifact.tar.gz", authed(s.handleArtifactTarGz))
	s.handle("GET /v1/jobs/{id}/artifact.zip", authed(s.handleArtifactZip))
	s.handle("GET /v1/jobs/{id}/diff", authed(s.handleDiff))
	s.handle("POST /v1/jobs/{id}/messages", authed(s.handleMessages))
	s.handle("POST /v1/jobs/{id}/commands", authed(s.handleCommand))
	s.handle("PUT /v1/jobs/{id}/files/{path...}", authed(s.handleWriteFile))
	s.handle("GET /healthz", http.HandlerFunc(s.handleHealthz))
	s.handle("GET /readyz", http.HandlerFunc(s.handleReadyz))
	s.handle("GET /metrics", promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{}))
	s.handle("GET /openapi.json", http.HandlerFunc(s.handleOpenAPI))
	s.liveRoutes()
	s.mcpRoutes()
}

// handle registers a route that takes JSON bodies (or none).
func (s *Server) handle(pattern string, h http.Handler) { s.handleBodies(pattern, jsonBodies, h) }

func cutSpace(p string) (string, string, bool) {
	for i := range p {
		if p[i] == ' ' {
			return p[:i], p[i+1:], true
		}
	}
	return "", p, false
}

// Routes lists the method and pattern of every route (for the OpenAPI test).
func (s *Server) Routes() [][2]string {
	out := make([][2]string, len(s.routes))
	for i, r := range s.routes {
		out[i] = [2]string{r.method, r.pattern}
	}
	return out
}

// Shutdown ends open event streams so that http.Server.Shutdown can finish;
// clients reconnect with Last-Event-ID to another replica or after restart.
func (s *Server) Shutdown() { s.closeOnce.Do(func() { close(s.closing) }) }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// statusRecorder remembers the status for metrics and logs.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusRecorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// instrument adds panic recovery, the boundary's checks (admit), JSON mux
// errors, metrics and access logs.
func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		in := r // the request the mux sees, where it records the route
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic in handler", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				if rec.status == 0 {
					s.writeError(rec, r, drydock.Errorf(drydock.EINTERNAL, "internal error"))
				}
			}
			pattern := in.Pattern
			if pattern == "" || pattern == "/" {
				pattern = "unmatched"
			}
			s.reqs.WithLabelValues(pattern, strconv.Itoa(rec.status)).Inc()
			if r.Header.Get("Accept") != "text/event-stream" {
				s.latency.WithLabelValues(pattern).Observe(time.Since(start).Seconds())
			}
			if s.log.Enabled(r.Context(), slog.LevelDebug) {
				s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", rec.status, "took", time.Since(start))
			}
		}()
		admitted, err := s.admit(r)
		if err != nil {
			s.writeError(rec, r, err)
			return
		}
		in = admitted
		next.ServeHTTP(&jsonMuxErrors{ResponseWriter: rec}, in)
	})
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		s.log.Warn("readiness: store does not answer", "err", err)
		s.writeError(w, r, drydock.Errorf(drydock.EUNAVAILABLE, "store is not available"))
		return
	}
	ready := map[string]string{"status": "ready"}
	if s.cfg.Isolation != "" {
		ready["isolation"] = s.cfg.Isolation
	}
	if s.cfg.IsolationWarning != "" {
		ready["isolation_warning"] = s.cfg.IsolationWarning
	}
	writeJSON(w, http.StatusOK, ready)
}
