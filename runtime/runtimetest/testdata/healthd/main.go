// Command healthd stands in for toolboxd in runtime tests: it serves only
// GET /v1/health, on the listen address and with the token a runtime hands
// toolboxd (TOOLBOXD_LISTEN, TOOLBOXD_TOKEN), so that a runtime can be tested
// with an image that takes a second to build. Build it with CGO_ENABLED=0.
package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "healthd:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := os.Getenv("TOOLBOXD_LISTEN")
	if listen == "" {
		listen = "unix:///run/toolbox/toolboxd.sock"
	}
	token := os.Getenv("TOOLBOXD_TOKEN")
	network, addr, ok := strings.Cut(listen, "://")
	if !ok {
		return fmt.Errorf("bad TOOLBOXD_LISTEN %q", listen)
	}
	if network == "unix" {
		_ = os.Remove(addr)
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return err
	}
	if network == "unix" {
		// The orchestrator on the host may run as another uid.
		if err := os.Chmod(addr, 0o666); err != nil {
			return err
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			http.Error(w, `{"error":{"code":"unauthorized","message":"bad token"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"ok","uid":%d}`+"\n", os.Getuid())
	})
	srv := &http.Server{Handler: mux}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
