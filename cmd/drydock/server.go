package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/agent"
	"github.com/drydockhq/drydock/agent/fake"
	"github.com/drydockhq/drydock/api"
	"github.com/drydockhq/drydock/llm/openai"
	"github.com/drydockhq/drydock/runner"
	"github.com/drydockhq/drydock/store/postgres"
	"github.com/drydockhq/drydock/store/sqlite"
	"github.com/drydockhq/drydock/watch"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// ServerCmd runs the orchestrator.
type ServerCmd struct {
	Listen          string          `default:"127.0.0.1:8080" env:"DRYDOCK_LISTEN" help:"Address to listen on. Anything but loopback requires API tokens."`
	DataDir         string          `default:"${data_dir}" env:"DRYDOCK_DATA_DIR" help:"Directory for the SQLite store, artifacts and local sandboxes."`
	Store           string          `env:"DRYDOCK_STORE" help:"postgres://... to share jobs between replicas (default: SQLite in the data directory)." placeholder:"URL"`
	PublicURL       string          `env:"DRYDOCK_PUBLIC_URL" help:"Base URL for links in answers (default: from the request's Host). A server on loopback answers requests for its host besides loopback names."`
	LiveURL         string          `env:"DRYDOCK_LIVE_URL" help:"Base URL (another host name pointing at this server) for live desktop and Jupyter views, so that what a sandbox serves never runs on the UI's origin. A server on loopback answers requests for its host besides loopback names."`
	Runtime         string          `default:"docker" enum:"docker,kubernetes,local" env:"DRYDOCK_RUNTIME" help:"Sandbox runtime: docker (Docker or Podman socket), kubernetes (one pod per job), or local (no isolation; development only)."`
	Artifacts       string          `env:"DRYDOCK_ARTIFACTS" help:"Where archived workspaces go: empty for the data directory, a directory, or s3://BUCKET[/PREFIX]?endpoint=...&region=... (credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)." placeholder:"URL"`
	DockerHost      string          `env:"DOCKER_HOST" help:"Docker or Podman API socket (default: the engine's default)."`
	ImageHeadless   string          `default:"drydock-sandbox:headless" env:"DRYDOCK_IMAGE_HEADLESS" help:"Sandbox image for headless jobs."`
	ImageDesktop    string          `default:"drydock-sandbox:desktop" env:"DRYDOCK_IMAGE_DESKTOP" help:"Sandbox image for desktop jobs."`
	Agent           string          `default:"llm" enum:"llm,fake" env:"DRYDOCK_AGENT" help:"llm: a model drives the tools; fake: a scripted agent for demos and tests (no model needed)."`
	LLM             string          `name:"llm" enum:",openai,anthropic" default:"" env:"DRYDOCK_LLM" help:"Model provider: openai (any OpenAI-compatible URL via OPENAI_BASE_URL) or anthropic; empty picks from the environment (ANTHROPIC_API_KEY, then OPENAI_API_KEY/OPENAI_BASE_URL)."`
	Model           string          `env:"DRYDOCK_MODEL" help:"Default model (a job's model field overrides it)."`
	OpenAIAPI       string          `name:"openai-api" default:"auto" enum:"auto,responses,chat" env:"DRYDOCK_OPENAI_API" help:"Wire API of the openai provider: auto (the Responses API for the o-series, gpt-5 and newer models on OpenAI's own API; Chat Completions for older models and for any other OPENAI_BASE_URL, such as vLLM, Ollama or llama.cpp), responses, or chat."`
	ReasoningEffort string          `name:"openai-reasoning-effort" env:"DRYDOCK_OPENAI_REASONING_EFFORT" help:"Reasoning effort of OpenAI reasoning models: one of none, minimal, low, medium, high, xhigh for all of them, or per model-name prefix, e.g. gpt-5=high,o4-mini=low,medium (a bare value is the others' default). A model named here has its reasoning carried across turns even if its name does not say it reasons. Empty leaves the model's default." placeholder:"EFFORT"`
	MaxSteps        int             `default:"100" env:"DRYDOCK_MAX_STEPS" help:"Step budget of jobs that set none."`
	MaxCostUSD      float64         `name:"max-cost-usd" env:"DRYDOCK_MAX_COST_USD" help:"Most estimated model cost of one job in USD; 0 is no limit."`
	ThinkingBudget  int             `name:"thinking-budget" env:"DRYDOCK_THINKING_BUDGET" help:"Extended-thinking budget in tokens for Claude models that can think (at least 1024; on top of the reply's room); 0 takes the model's default (4096 for Claude 4 models), negative turns thinking off."`
	MaxConcurrent   int             `default:"2" env:"DRYDOCK_MAX_CONCURRENT" help:"Jobs this server runs at once; 0 serves the API only (another replica runs the jobs)."`
	JobTimeout      time.Duration   `default:"30m" env:"DRYDOCK_JOB_TIMEOUT" help:"Default wall-time limit of a job."`
	AskTimeout      time.Duration   `default:"30m" env:"DRYDOCK_ASK_TIMEOUT" help:"How long the agent of an interactive job waits for an answer to an ask_user question before it goes on without one."`
	Isolation       string          `default:"auto" enum:"auto,gvisor,runc" env:"DRYDOCK_ISOLATION" help:"What Docker/Podman sandboxes run under: gvisor (gVisor's runsc, a kernel in user space: refuses to start without it), runc (the engine's default), or auto (gVisor when the engine offers it, else runc with a warning). Checked at start with a probe container. Kubernetes: use --kube-runtime-class."`
	FollowUpSecrets time.Duration   `name:"follow-up-secrets" default:"24h" env:"DRYDOCK_FOLLOW_UP_SECRETS" help:"How long a finished job keeps its secrets (sealed, in the store) so that a follow-up inherits them; after it a follow-up must give them again. 0 erases them when the job ends."`
	PauseMax        time.Duration   `default:"1h" env:"DRYDOCK_PAUSE_MAX" help:"Longest a job stays paused (by a person, or while one controls its desktop): after it the job resumes by itself and its agent is told. 0 is no limit. A pause does not stop the job's wall-time limit (--job-timeout)."`
	LeaseTTL        time.Duration   `default:"10s" help:"How long a job's lease lasts without a heartbeat: a dead replica's jobs move to another after at most this long."`
	ReapInterval    time.Duration   `default:"1m" env:"DRYDOCK_REAP_INTERVAL" help:"How often this server looks for sandboxes whose job has ended (and purges expired idempotency keys). Shorter frees sandboxes of jobs that ended while a replica was down sooner, at the cost of a list call to the runtime each time."`
	MaxUploadMiB    int64           `name:"max-upload-mib" default:"256" env:"DRYDOCK_MAX_UPLOAD_MIB" help:"Largest workspace archive a job can be created with, in MiB as sent; it may also expand to at most the sandbox's workspace size (--sandbox-disk-mib)."`
	IdemTTL         time.Duration   `name:"idempotency-ttl" default:"24h" env:"DRYDOCK_IDEMPOTENCY_TTL" help:"How long an Idempotency-Key of a job creation is remembered: a retry with the key within this time returns the first job."`
	NodeID          string          `env:"DRYDOCK_NODE_ID" help:"Stable name of this server, unique among replicas (default: host name and listen port)."`
	LogLevel        slog.Level      `default:"info" env:"DRYDOCK_LOG_LEVEL" help:"debug, info, warn or error."`
	LogFormat       string          `default:"text" enum:"text,json" env:"DRYDOCK_LOG_FORMAT" help:"Log format: text or json."`
	ShutdownGrace   time.Duration   `default:"20s" help:"How long in-flight requests may take to finish on SIGTERM."`
	Resources       ResourceOptions `embed:"" prefix:"sandbox-"`
	Trust           TrustOptions    `embed:"" prefix:"sandbox-"`
	Pool            PoolOptions     `embed:"" prefix:"pool-"`
	Kube            KubeOptions     `embed:""`
	Egress          EgressOptions   `embed:"" prefix:"egress-"`
	Secrets         SecretsOptions  `embed:""`

	// isolation and isolationWarning are what buildRuntime resolved
	// --isolation to, for /readyz.
	isolation, isolationWarning string
}

// ResourceOptions are the per-sandbox limits. The aliases are the names
// kong derived from the field names before they were given names of their
// own (--sandbox-memory-mi-b); scripts written then keep working.
type ResourceOptions struct {
	CPUs      float64 `name:"cpus" aliases:"sandbox-cp-us" default:"1" help:"CPUs per sandbox."`
	MemoryMiB int64   `name:"memory-mib" aliases:"sandbox-memory-mi-b" default:"4096" help:"Memory limit per sandbox in MiB. The sandbox's tmpfs mounts (workspace, /tmp, home) count against it; Docker and Podman keep them below it with a reserve for processes (a quarter, 256-1024 MiB), so a full workspace is 'no space left', not an OOM kill."`
	Pids      int64   `default:"1024" help:"Process limit per sandbox."`
	DiskMiB   int64   `name:"disk-mib" aliases:"sandbox-disk-mi-b" default:"2048" help:"Workspace size limit per sandbox in MiB (on Docker and Podman at most what --sandbox-memory-mib leaves after /tmp, home and the reserve for processes)."`
}

func newLogger(w *os.File, level slog.Level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// pauseMax is --pause-max as the runner takes it: 0 there is its default,
// no limit is negative.
func pauseMax(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// openStore opens Postgres for a postgres:// URL and SQLite in the data
// directory otherwise.
func openStore(ctx context.Context, url, dataDir string, log *slog.Logger) (drydock.Store, error) {
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		st, err := postgres.Open(ctx, url, log)
		if err != nil {
			return nil, fmt.Errorf("open postgres store: %w", err)
		}
		return st, nil
	}
	if url != "" {
		return nil, fmt.Errorf("--store %q: use a postgres:// URL, or leave it empty for SQLite in the data directory", url)
	}
	st, err := sqlite.Open(ctx, filepath.Join(dataDir, "drydock.db"), log)
	if err != nil {
		return nil, fmt.Errorf("open sqlite store in %s: %w", dataDir, err)
	}
	return st, nil
}

// isLoopback reports whether addr only accepts connections from this host.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c *ServerCmd) Run(g *Globals) error {
	log := newLogger(os.Stderr, c.LogLevel, c.LogFormat)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if c.ReapInterval < time.Second {
		return fmt.Errorf("--reap-interval %s: want at least 1s, e.g. 30s or 5m", c.ReapInterval)
	}
	if c.MaxUploadMiB < 1 || c.MaxUploadMiB > 1<<20 {
		return fmt.Errorf("--max-upload-mib %d: want 1 to 1048576 (MiB)", c.MaxUploadMiB)
	}
	if err := openai.CheckReasoningEffort(c.ReasoningEffort); err != nil {
		return fmt.Errorf("--openai-reasoning-effort: %s", drydock.ErrorMessage(err))
	}
	egressPolicy, err := c.Egress.policy()
	if err != nil {
		return err
	}
	trustedCAs, err := c.Trust.bundle(time.Now(), log)
	if err != nil {
		return err
	}
	if c.Runtime == "kubernetes" && len(egressPolicy.Default) > 0 && c.Kube.KubeEgressGateway == "" {
		// Every job without a list would be refused at its sandbox's start.
		return fmt.Errorf("--egress-default needs --kube-egress-gateway on Kubernetes: without a gateway pods have no way out, and jobs with egress are refused")
	}
	if c.NodeID == "" {
		// Host name plus port: unique for replicas on one host, and stable
		// across restarts so a server recovers its own jobs at once.
		h, err := os.Hostname()
		if err != nil {
			h = "drydock"
		}
		_, port, _ := net.SplitHostPort(c.Listen)
		c.NodeID = h + "-" + port
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir %s: %w", c.DataDir, err)
	}
	st, err := openStore(ctx, c.Store, c.DataDir, log.With("component", "store"))
	if err != nil {
		return err
	}
	defer st.Close()

	tokens, err := st.CountTokens(ctx)
	if err != nil {
		return fmt.Errorf("count tokens: %w", err)
	}
	// Development mode is allowed on loopback only and decided per request
	// (api.Server.devMode): it lasts while no token exists.
	devMode := isLoopback(c.Listen)
	switch {
	case tokens == 0 && !devMode:
		return fmt.Errorf("refusing to listen on %s without API tokens: anyone who can reach it could run code. Create a token with 'drydock token create --admin --data-dir %s', or listen on 127.0.0.1", c.Listen, c.DataDir)
	case tokens == 0:
		log.Warn("development mode: no API tokens exist, so requests without a token act as the local admin until the first token is created; this is allowed on loopback only", "listen", c.Listen)
	}

	secrets, err := c.Secrets.box(ctx, st, c.DataDir, c.Store == "", log)
	if err != nil {
		return err
	}

	artifacts, where, err := openArtifacts(ctx, c.Artifacts, c.DataDir, os.Getenv)
	if err != nil {
		return err
	}
	log.Info("artifacts", "store", where)
	rt, engine, pool, closeRuntime, err := c.buildRuntime(ctx, log)
	if err != nil {
		return err
	}
	defer closeRuntime()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ws := watch.Wrap(st)
	var ag drydock.Agent
	switch c.Agent {
	case "fake":
		log.Warn("fake agent: jobs run a scripted demo, not a model")
		ag = &fake.Agent{Dial: func(sb *drydock.Sandbox) fake.Workspace { return pool.Get(sb) }}
	default:
		a, err := agent.New(llmFromEnv(agent.Config{
			Provider:        c.LLM,
			Model:           c.Model,
			OpenAIAPI:       c.OpenAIAPI,
			ReasoningEffort: c.ReasoningEffort,
			MaxSteps:        c.MaxSteps,
			MaxCostUSD:      c.MaxCostUSD,
			ThinkingBudget:  c.ThinkingBudget,
			AskTimeout:      c.AskTimeout,
			Dial:            pool.Get,
		}, os.Getenv, os.Environ()), log.With("component", "agent"))
		if err != nil {
			return fmt.Errorf("llm agent: %w", err)
		}
		if err := a.Check(); err != nil {
			log.Warn("the LLM agent cannot run jobs until configured; every job will fail with this message", "reason", drydock.ErrorMessage(err))
		}
		ag = a
	}
	rcfg := runner.Config{
		NodeID:          c.NodeID,
		MaxConcurrent:   c.MaxConcurrent,
		LeaseTTL:        c.LeaseTTL,
		ReapInterval:    c.ReapInterval,
		DefaultTimeout:  c.JobTimeout,
		PauseMax:        pauseMax(c.PauseMax),
		TrustedCAs:      trustedCAs,
		FollowUpSecrets: c.FollowUpSecrets,
		Images: map[drydock.Profile]string{
			drydock.ProfileHeadless: c.ImageHeadless,
			drydock.ProfileDesktop:  c.ImageDesktop,
		},
		Resources: drydock.Resources{
			CPUs:           c.Resources.CPUs,
			MemoryBytes:    c.Resources.MemoryMiB << 20,
			PidsLimit:      c.Resources.Pids,
			WorkspaceBytes: c.Resources.DiskMiB << 20,
		},
	}
	warm, err := c.warmPool(rt, engine, pool, rcfg, reg, log)
	if err != nil {
		return err
	}
	eg, err := newEgressWiring(c.Egress, egressPolicy, ws, engine, log)
	if err != nil {
		return err
	}
	defer eg.Close()
	run := runner.New(rcfg, runner.Deps{
		Store: ws, Runtime: rt, Agent: ag, Artifacts: artifacts,
		Toolbox: func(sb *drydock.Sandbox) runner.Toolbox { return toolboxConn{pool.Get(sb)} },
		Logger:  log, Metrics: runner.NewMetrics(reg), Pool: warm,
		Egress: eg.Open, Secrets: secrets,
	})
	// Uploads wait on the data directory's disk while they are checked,
	// not in a /tmp that may be memory.
	uploadDir := filepath.Join(c.DataDir, "uploads")
	if err := os.MkdirAll(uploadDir, 0o700); err != nil {
		return fmt.Errorf("create the upload directory: %w", err)
	}
	srv := api.New(api.Config{
		DevMode:          devMode,
		PublicURL:        c.PublicURL,
		LiveURL:          c.LiveURL,
		Sandboxes:        rt.Get,
		Toolbox:          pool,
		LinkKeyFile:      filepath.Join(c.DataDir, "link.key"),
		EgressChanged:    eg.Changed,
		Egress:           egressPolicy,
		Secrets:          secrets,
		IdempotencyTTL:   c.IdemTTL,
		UploadDir:        uploadDir,
		Upload:           api.UploadLimits{Bytes: c.MaxUploadMiB << 20, Expanded: c.Resources.DiskMiB << 20},
		FollowUpSecrets:  c.FollowUpSecrets,
		Isolation:        c.isolation,
		IsolationWarning: c.isolationWarning,
		Version:          version,
	}, ws, run, artifacts, reg, log)

	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another drydock server running? choose another address with --listen)", c.Listen, err)
	}
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	hs.RegisterOnShutdown(srv.Shutdown)

	runCtx, stopRunner := context.WithCancel(context.Background())
	defer stopRunner()
	runDone := make(chan error, 1)
	if c.MaxConcurrent > 0 {
		go func() { runDone <- run.Run(runCtx) }()
	} else {
		log.Info("API-only mode: this server runs no jobs (--max-concurrent 0)")
		go func() { <-runCtx.Done(); runDone <- nil }()
	}
	serveDone := make(chan error, 1)
	go func() { serveDone <- hs.Serve(ln) }()
	log.Info("drydock server listening", "url", "http://"+ln.Addr().String(), "runtime", rt.Name(), "node", c.NodeID, "owner", run.Owner(), "data_dir", c.DataDir, "max_concurrent", c.MaxConcurrent)

	select {
	case <-ctx.Done():
		log.Info("shutting down: finishing in-flight requests; running jobs stay recoverable")
	case err := <-serveDone:
		stopRunner()
		<-runDone
		return fmt.Errorf("serve: %w", err)
	case err := <-runDone:
		shutdownHTTP(hs, c.ShutdownGrace, log)
		return fmt.Errorf("runner: %w", err)
	}
	shutdownHTTP(hs, c.ShutdownGrace, log)
	stopRunner()
	if err := <-runDone; err != nil {
		log.Error("runner stopped with error", "err", err)
	}
	log.Info("stopped")
	return nil
}

func shutdownHTTP(hs *http.Server, grace time.Duration, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("http shutdown", "err", err)
		hs.Close()
	}
}
