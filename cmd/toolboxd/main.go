// Command toolboxd is the daemon that runs inside every sandbox: it serves
// the toolbox API (package toolbox/server) on a unix socket or a TCP address.
//
// Configuration comes from flags, each with an environment default (the
// runtimes set the environment; see runtime/docker):
//
//	-listen      TOOLBOXD_LISTEN      unix:///PATH, tcp://HOST:PORT (also unix:PATH, /PATH, HOST:PORT)
//	-token-file  TOOLBOXD_TOKEN_FILE  a file holding the token; TOOLBOXD_TOKEN (or TOOLBOX_TOKEN) holds it directly
//	-workspace   TOOLBOXD_WORKSPACE   the directory every file path is confined to
//	-profile     TOOLBOXD_PROFILE     headless or desktop
//	-log-level   TOOLBOXD_LOG_LEVEL   debug, info, warn or error
//	-services    TOOLBOXD_SERVICES    auto (code kernel; plus the desktop in the desktop profile) or none
//
// TOOLBOXD_VNC_PASSWORD protects the desktop's VNC server. TOOLBOXD_SECRETS_FILE
// names a JSON file {"token", "vnc_password"} read and removed at start; the
// runtimes use it so that no secret sits in the sandbox's environment.
//
// The token is removed from the environment before anything is started, and
// no TOOLBOXD_ variable reaches the sandbox's shells and processes. Logs are
// JSON on stderr. SIGTERM or SIGINT shuts down gracefully.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/oomscore"
	"github.com/drydockhq/drydock/toolbox"
	"github.com/drydockhq/drydock/toolbox/server"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// The environment toolboxd reads.
const (
	envListen     = "TOOLBOXD_LISTEN"
	envToken      = "TOOLBOXD_TOKEN"
	envTokenAlias = "TOOLBOX_TOKEN"
	envTokenFile  = "TOOLBOXD_TOKEN_FILE"
	envWorkspace  = "TOOLBOXD_WORKSPACE"
	envProfile    = "TOOLBOXD_PROFILE"
	// envMemoryLimit: the sandbox memory limit toolboxd enforces itself
	// (runtime/docker sets it under gVisor).
	envMemoryLimit = "TOOLBOXD_MEMORY_LIMIT"
	envLogLevel    = "TOOLBOXD_LOG_LEVEL"
	envVNCPass     = "TOOLBOXD_VNC_PASSWORD"
	envServices    = "TOOLBOXD_SERVICES"
	// envRuntimeDir holds the kernel's and the desktop's sockets and files
	// (default $TMPDIR/drydock). One toolboxd runs per sandbox; tests that
	// run several in one process give each its own.
	envRuntimeDir = "TOOLBOXD_RUNTIME_DIR"
	// envDisplay is the X display number of the desktop profile (default
	// 1). Each sandbox has its own; tests that run several desktops on one
	// host give each its own.
	envDisplay = "TOOLBOXD_DISPLAY"
)

// shutdownGrace bounds how long requests in flight (a long command) may
// delay the exit.
const shutdownGrace = 10 * time.Second

func main() {
	// Started as the shim of a command (oomscore.Wrap): become it.
	oomscore.Shim(os.Args)
	// Before any thread or child exists, so that all of them count.
	if err := limitTasks(os.Getenv(envTasksLimit)); err != nil {
		fmt.Fprintln(os.Stderr, "toolboxd:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	secrets := map[string]string{}
	for _, k := range []string{envToken, envTokenAlias, envVNCPass} {
		secrets[k] = os.Getenv(k)
		os.Unsetenv(k)
	}
	getenv := func(k string) string {
		if v, ok := secrets[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	if err := undumpable(); err != nil {
		fmt.Fprintln(os.Stderr, "toolboxd: warning:", err)
	}
	if err := run(ctx, os.Args[1:], getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "toolboxd:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends. It is main without the process: tests call it.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	envOr := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	fl := flag.NewFlagSet("toolboxd", flag.ContinueOnError)
	fl.SetOutput(stderr)
	listen := fl.String("listen", envOr(envListen, "unix:///run/toolbox/toolboxd.sock"), "unix:///PATH or tcp://HOST:PORT")
	tokenFile := fl.String("token-file", getenv(envTokenFile), "file holding the bearer token (default: $"+envToken+")")
	workspace := fl.String("workspace", envOr(envWorkspace, "/workspace"), "directory every file path is confined to")
	profile := fl.String("profile", envOr(envProfile, string(drydock.ProfileHeadless)), "headless or desktop")
	logLevel := fl.String("log-level", envOr(envLogLevel, "info"), "debug, info, warn or error")
	withServices := fl.String("services", envOr(envServices, "auto"), "auto: start the code kernel (and the desktop in the desktop profile); none: files and shell only")
	showVersion := fl.Bool("version", false, "print the version and exit")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *showVersion {
		fmt.Fprintf(stderr, "toolboxd %s (API %d)\n", version, toolbox.APIVersion)
		return nil
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	if p := drydock.Profile(*profile); !p.Valid() {
		return fmt.Errorf("-profile must be %q or %q", drydock.ProfileHeadless, drydock.ProfileDesktop)
	}
	var (
		boot toolbox.BootSecrets
		err  error
	)
	if f := getenv(envSecretsFile); f != "" {
		if boot, err = takeSecrets(f); err != nil {
			return err
		}
	}
	token := boot.Token
	if token == "" {
		if token, err = readToken(*tokenFile, envOr(envToken, getenv(envTokenAlias))); err != nil {
			return err
		}
	}
	vncPassword := envOr(envVNCPass, "")
	if boot.VNCPassword != "" {
		vncPassword = boot.VNCPassword
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})).With("component", "toolboxd")
	// In the background: it takes a tenth of a second that the sandbox's
	// start should not wait for.
	go func() {
		spare := spareThreads()
		logger.Debug("threads reserved", "spare", spare, "threads", reserveThreads(spare), "pids_limit", pidsLimit())
	}()

	ln, cleanup, err := listenOn(*listen)
	if err != nil {
		return err
	}
	defer cleanup()
	if _, stopEgress, err := startEgress(getenv, token, logger); err != nil {
		logger.Error("egress forwarder not started: the sandbox's processes have no network", "err", err)
	} else {
		defer stopEgress()
	}

	home, _ := os.UserHomeDir()
	self, err := os.Executable()
	if err != nil {
		logger.Warn("own executable unknown: commands get the highest OOM score just after they start", "err", err)
		self = ""
	}
	cfg := server.Config{
		ExecShim:  self,
		Workspace: *workspace,
		Token:     token,
		Profile:   drydock.Profile(*profile),
		Version:   version,
		// The sandbox's cgroup and the directories that may be tmpfs, whose
		// files count against its memory: replies name them on OOM kills.
		Memory: server.MemoryConfig{Cgroup: server.DetectMemoryCgroup(), Mounts: []string{*workspace, "/tmp", home, "/dev/shm"}},
	}
	if v := getenv(envMemoryLimit); v != "" {
		limit, err := strconv.ParseInt(v, 10, 64)
		if err != nil || limit <= 0 {
			return fmt.Errorf("$%s: %q is not a number of bytes", envMemoryLimit, v)
		}
		if cfg.Memory.Cgroup == "" {
			logger.Warn("no memory cgroup to read the use from: the memory limit is not enforced by toolboxd", "limit", limit)
		}
		cfg.Memory.Limit = limit
	}
	switch *withServices {
	case "none":
	case "auto":
		display, err := displayNumber(getenv(envDisplay))
		if err != nil {
			return err
		}
		st := services(ctx, drydock.Profile(*profile), *workspace, envOr(envRuntimeDir, filepath.Join(os.TempDir(), "drydock")), vncPassword, display, logger)
		defer st.kernel.Close()
		cfg.Code = codeService{st.kernel}
		cfg.Jupyter = jupyterService{st.kernel}
		cfg.Env = st.env
		if st.desktop != nil {
			defer st.desktop.Close()
			cfg.Desktop = desktopService{st.desktop}
		}
	default:
		return fmt.Errorf("-services must be auto or none")
	}
	srv := server.New(cfg, logger)
	defer srv.Close()
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	logger.Info("listening", "address", ln.Addr().String(), "network", ln.Addr().Network(),
		"workspace", *workspace, "profile", *profile, "version", version, "api_version", toolbox.APIVersion)

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		logger.Warn("requests still running at shutdown; closing them", "err", err)
		hs.Close()
	}
	return nil
}

// displayNumber parses TOOLBOXD_DISPLAY; empty is the desktop's default.
func displayNumber(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimPrefix(v, ":"))
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("%s=%q: want a display number such as 1", envDisplay, v)
	}
	return n, nil
}

// readToken prefers the token file; an empty token is refused, since the
// server would then answer nothing but 401.
func readToken(file, env string) (string, error) {
	tok := env
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("read token file: %w", err)
		}
		tok = string(b)
	}
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return "", errors.New("no token: set " + envToken + " or -token-file")
	}
	return tok, nil
}

// listenOn opens a unix socket (unix:///PATH, unix:PATH or an absolute
// PATH) or a TCP address (tcp://HOST:PORT or HOST:PORT), and returns a
// cleanup that removes the socket file.
func listenOn(addr string) (net.Listener, func(), error) {
	path, isUnix := strings.CutPrefix(addr, "unix:")
	if !isUnix && strings.HasPrefix(addr, "/") {
		path, isUnix = addr, true
	}
	if !isUnix {
		addr = strings.TrimPrefix(addr, "tcp://")
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, nil, fmt.Errorf("listen on %s: %w", addr, err)
		}
		return ln, func() {}, nil
	}
	path = strings.TrimPrefix(path, "//") // unix:///path
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("socket directory: %w", err)
	}
	// A socket left by a daemon that died is in the way; anything else at
	// the path is not ours to remove.
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		os.Remove(path)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	// The orchestrator connects from the host, often as another uid; the
	// bearer token, not the file mode, is what guards the API.
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, nil, fmt.Errorf("chmod socket: %w", err)
	}
	return ln, func() { ln.Close() }, nil
}
