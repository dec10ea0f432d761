package toolbox_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drydockhq/drydock"
	"github.com/drydockhq/drydock/toolbox"
	"github.com/drydockhq/drydock/toolbox/server"
)

const token = "client-test-token"

type env struct {
	ws     string
	socket string
	client *toolbox.Client
	srv    *server.Server
}

// serve runs a toolbox server over a fresh workspace on a unix socket,
// optionally wrapping its handler.
func serve(t testing.TB, wrap func(http.Handler) http.Handler) *env {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	srv := server.New(server.Config{Workspace: ws, Token: token, StateDir: filepath.Join(dir, "state")}, slog.New(slog.DiscardHandler))
	var h http.Handler = srv
	if wrap != nil {
		h = wrap(srv)
	}
	sock := filepath.Join(dir, "tb.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	c := toolbox.New(drydock.Endpoint{Network: "unix", Address: sock}, token)
	t.Cleanup(func() {
		c.Close()
		hs.Close()
		srv.Close()
	})
	return &env{ws: ws, socket: sock, client: c, srv: srv}
}

func TestClientFiles(t *testing.T) {
	t.Parallel()
	e := serve(t, nil)
	ctx := t.Context()
	c := e.client
	if err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil || info.APIVersion != toolbox.APIVersion || info.Workspace != e.ws {
		t.Fatalf("info %+v %v", info, err)
	}
	if err := c.WriteFile(ctx, "a/b.txt", []byte("one\ntwo\nthree\n")); err != nil {
		t.Fatal(err)
	}
	if data, err := c.ReadFile(ctx, filepath.Join(e.ws, "a/b.txt")); err != nil || string(data) != "one\ntwo\nthree\n" {
		t.Errorf("ReadFile by absolute path = %q, %v", data, err)
	}
	if data, total, err := c.ReadLines(ctx, "a/b.txt", 2, 2); err != nil || string(data) != "two\n" || total != 3 {
		t.Errorf("ReadLines = %q, %d, %v", data, total, err)
	}
	fi, err := c.WriteFileMode(ctx, "run.sh", []byte("#!/bin/sh\n"), 0o755)
	if err != nil || fi.Mode != 0o755 {
		t.Errorf("WriteFileMode = %+v, %v", fi, err)
	}
	if err := c.WriteFile(ctx, "empty", nil); err != nil {
		t.Errorf("empty write: %v", err)
	}
	if err := c.Mkdir(ctx, "d/e"); err != nil {
		t.Fatal(err)
	}
	if err := c.Move(ctx, "run.sh", "d/e/run.sh", false); err != nil {
		t.Fatal(err)
	}
	if fi, err := c.Stat(ctx, "d/e/run.sh"); err != nil || fi.Type != toolbox.TypeFile || fi.Size != 10 {
		t.Errorf("Stat = %+v, %v", fi, err)
	}
	ents, err := c.List(ctx, ".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
	}
	if diff := cmp.Diff([]string{"a", "d", "empty"}, names); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if err := c.Delete(ctx, "d", false); drydock.ErrorCode(err) != drydock.ECONFLICT {
		t.Errorf("non-recursive delete of a full dir: %v", err)
	}
	if err := c.Delete(ctx, "d", true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		err  error
		code string
	}{
		{func() error { _, err := c.ReadFile(ctx, "nope"); return err }(), drydock.ENOTFOUND},
		{func() error { _, err := c.ReadFile(ctx, "../etc/passwd"); return err }(), drydock.EFORBIDDEN},
		{c.WriteFile(ctx, "/etc/evil", []byte("x")), drydock.EFORBIDDEN},
		{c.Move(ctx, "a/b.txt", "empty", false), drydock.ECONFLICT},
	} {
		if drydock.ErrorCode(c.err) != c.code || drydock.ErrorMessage(c.err) == "internal error" {
			t.Errorf("error %v: code %s, want %s", c.err, drydock.ErrorCode(c.err), c.code)
		}
	}
}

func TestClientTarRoundTrip(t *testing.T) {
	t.Parallel()
	e := serve(t, nil)
	ctx := t.Context()
	c := e.client
	files := map[string]string{"src/a.txt": "a", "src/x/y/z.txt": strings.Repeat("z", 1<<20), "src/.git/HEAD": "ref"}
	for p, data := range files {
		if err := c.WriteFile(ctx, p, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	rc, err := c.DownloadTar(ctx, "src", ".git")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, rc); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	res, err := c.UploadTar(ctx, "dst", &buf)
	if err != nil || res.Files != 2 || res.Bytes != 1<<20+1 {
		t.Fatalf("UploadTar = %+v, %v", res, err)
	}
	for p, data := range files {
		got, err := c.ReadFile(ctx, strings.Replace(p, "src/", "dst/", 1))
		if strings.Contains(p, ".git") {
			if drydock.ErrorCode(err) != drydock.ENOTFOUND {
				t.Errorf("excluded %s came through: %v", p, err)
			}
			continue
		}
		if err != nil || string(got) != data {
			t.Errorf("%s after round trip: %d bytes, %v", p, len(got), err)
		}
	}
	// A tar of the workspace lists what the orchestrator archives.
	rc, err = c.DownloadTar(ctx, ".")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	sort.Strings(names)
	want := []string{"dst/", "dst/a.txt", "dst/x/", "dst/x/y/", "dst/x/y/z.txt", "src/", "src/.git/", "src/.git/HEAD", "src/a.txt", "src/x/", "src/x/y/", "src/x/y/z.txt"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("workspace tar (-want +got):\n%s", diff)
	}
}

func TestClientSessionsAndExec(t *testing.T) {
	t.Parallel()
	e := serve(t, nil)
	ctx := t.Context()
	c := e.client
	s, err := c.CreateSession(ctx, toolbox.SessionRequest{ID: "main"})
	if err != nil || s.ID != "main" {
		t.Fatalf("CreateSession = %+v, %v", s, err)
	}
	if _, err := c.Run(ctx, "main", toolbox.RunRequest{Command: "cd /tmp; X=1"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(ctx, "main", toolbox.RunRequest{Command: "pwd; echo $X"})
	if err != nil || res.Output != "/tmp\n1\n" || res.ExitCode != 0 {
		t.Errorf("Run = %+v, %v", res, err)
	}
	res, err = c.Run(ctx, "main", toolbox.RunRequest{Command: "sleep 30", IdleTimeout: drydock.Duration(100 * time.Millisecond)})
	if err != nil || !res.Running {
		t.Fatalf("Run with soft timeout = %+v, %v", res, err)
	}
	res, err = c.Interrupt(ctx, "main")
	if err != nil || !res.Interrupted || res.ExitCode != 130 {
		t.Errorf("Interrupt = %+v, %v", res, err)
	}
	if _, err := c.RestartSession(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	list, err := c.Sessions(ctx)
	if err != nil || len(list) != 1 {
		t.Errorf("Sessions = %+v, %v", list, err)
	}
	if err := c.DeleteSession(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(ctx, "main", toolbox.RunRequest{Command: "true"}); drydock.ErrorCode(err) != drydock.ENOTFOUND {
		t.Errorf("Run in a deleted session: %v", err)
	}

	var stdout, stderr bytes.Buffer
	er, err := c.Exec(ctx, toolbox.ExecRequest{Command: "echo out; echo err >&2; exit 3"}, &stdout, &stderr)
	if err != nil || er.ExitCode != 3 || stdout.String() != "out\n" || stderr.String() != "err\n" {
		t.Errorf("Exec = %+v, %v, %q, %q", er, err, stdout.String(), stderr.String())
	}
	if _, err := c.Exec(ctx, toolbox.ExecRequest{}, nil, nil); drydock.ErrorCode(err) != drydock.EINVALID {
		t.Errorf("empty exec: %v", err)
	}
	// Cancelling the context kills the process.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.Exec(cctx, toolbox.ExecRequest{Command: "sleep 30 && touch survived"}, nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("cancelled Exec: %v after %v", err, time.Since(start))
	}
	if _, err := c.RunCode(ctx, toolbox.CodeRequest{Language: "python", Code: "1"}); drydock.ErrorCode(err) != drydock.ENOTIMPLEMENTED {
		t.Errorf("RunCode without a runner: %v", err)
	}
	if _, err := c.Screenshot(ctx); drydock.ErrorCode(err) != drydock.ENOTIMPLEMENTED {
		t.Errorf("Screenshot without a desktop: %v", err)
	}
}

// dropFirstResponses lets the first n mutating requests do their work and
// then cuts the connection before any reply, as a network failure would.
func dropFirstResponses(n int32, dropped *atomic.Int32) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && dropped.Load() < n {
				dropped.Add(1)
				next.ServeHTTP(httptest.NewRecorder(), r)
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func TestClientRetriesWithSameRequestID(t *testing.T) {
	t.Parallel()
	var dropped atomic.Int32
	e := serve(t, dropFirstResponses(2, &dropped))
	ctx := t.Context()
	c := e.client
	if _, err := c.CreateSession(ctx, toolbox.SessionRequest{ID: "s"}); err != nil {
		t.Fatalf("CreateSession through a flaky connection: %v", err)
	}
	dropped.Store(0)
	res, err := c.Run(ctx, "s", toolbox.RunRequest{Command: "echo x >> count; wc -l < count"})
	if err != nil || res.Output != "1\n" {
		t.Fatalf("Run through a flaky connection = %+v, %v", res, err)
	}
	if data, _ := os.ReadFile(filepath.Join(e.ws, "count")); string(data) != "x\n" {
		t.Errorf("the command ran %d times", strings.Count(string(data), "x"))
	}
	if dropped.Load() != 2 {
		t.Errorf("%d responses dropped, want 2", dropped.Load())
	}
}

func TestClientGivesUpAndWaitReady(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "late.sock")
	c := toolbox.New(drydock.Endpoint{Network: "unix", Address: sock}, token)
	defer c.Close()
	err := c.WriteFile(t.Context(), "x", []byte("x"))
	if !drydock.IsRetryable(err) {
		t.Errorf("write to a missing daemon: %v; want a retryable unavailable error", err)
	}
	// WaitReady keeps polling while the daemon starts.
	ws := t.TempDir()
	srv := server.New(server.Config{Workspace: ws, Token: token}, nil)
	defer srv.Close()
	hs := &http.Server{Handler: srv}
	defer hs.Close()
	go func() {
		time.Sleep(300 * time.Millisecond)
		ln, err := net.Listen("unix", sock)
		if err != nil {
			return
		}
		hs.Serve(ln)
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	// Waiting for a component the sandbox lacks ends with the reason.
	ctx2, cancel2 := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel2()
	err = c.WaitReady(ctx2, "display")
	if err == nil || !strings.Contains(drydock.ErrorMessage(err), "display") {
		t.Errorf("WaitReady for a missing component: %v", err)
	}
	// A wrong token is not worth waiting for.
	bad := toolbox.New(drydock.Endpoint{Network: "unix", Address: sock}, "wrong")
	defer bad.Close()
	if err := bad.WaitReady(t.Context()); drydock.ErrorCode(err) != drydock.EUNAUTHORIZED {
		t.Errorf("WaitReady with a wrong token: %v", err)
	}
}

func TestClientTCP(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	srv := server.New(server.Config{Workspace: ws, Token: token}, nil)
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	c := toolbox.New(drydock.Endpoint{Network: "tcp", Address: strings.TrimPrefix(ts.URL, "http://")}, token)
	defer c.Close()
	if err := c.WriteFile(t.Context(), "f", []byte("tcp")); err != nil {
		t.Fatal(err)
	}
	if data, err := c.ReadFile(t.Context(), "f"); err != nil || string(data) != "tcp" {
		t.Errorf("ReadFile over tcp = %q, %v", data, err)
	}
}
